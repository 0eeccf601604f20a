/**
 * Conversion results as files: a name by media type, and the bytes as a Blob. A multipart/mixed
 * result (a JWE in parts) is saved as its body, exactly as a job stores it (`<name>.jwe`): the
 * body starts with its first delimiter, which names the boundary, so `keyward open`, the jobs'
 * downloads and the console's files are one format.
 */

/**
 * A download name for a conversion's result by its media type.
 * @param {string} name the input's name
 * @param {string} type
 */
export function resultName(name, type) {
  const base = name.replace(/\.(p7m|p7s|p7b|p7|cms|der|pem|jwe|jws|json)$/i, '') || 'converted';
  if (type.startsWith('application/json')) return `${base}.jws.json`;
  if (type.startsWith('multipart/mixed')) return `${base}.jwe`;
  return `${base}.bin`;
}

/**
 * The result's bytes as a Blob to download.
 * @param {string} type the answer's Content-Type
 * @param {ArrayBuffer} bytes
 */
export function resultBlob(type, bytes) {
  return new Blob([bytes], {
    type: type.startsWith('multipart/') ? 'application/octet-stream' : type,
  });
}
