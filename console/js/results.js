/**
 * Conversion results as files: a name by media type, and the bytes as a Blob. A multipart/mixed
 * result (a JWE in parts, contract 5) is saved as a MIME entity whose Content-Type line names
 * the boundary, so the file alone can be parsed again.
 */

/**
 * A download name for a conversion's result by its media type.
 * @param {string} name the input's name
 * @param {string} type
 */
export function resultName(name, type) {
  const base = name.replace(/\.(p7m|p7s|p7b|p7|cms|der|pem|jwe|jws|json)$/i, '') || 'converted';
  if (type.startsWith('application/json')) return `${base}.jws.json`;
  if (type.startsWith('multipart/mixed')) return `${base}.jwe.mime`;
  return `${base}.bin`;
}

/**
 * The result's bytes as a Blob to download.
 * @param {string} type the answer's Content-Type
 * @param {ArrayBuffer} bytes
 */
export function resultBlob(type, bytes) {
  return type.startsWith('multipart/')
    ? new Blob([`MIME-Version: 1.0\r\nContent-Type: ${type}\r\n\r\n`, bytes], {
        type: 'message/rfc822',
      })
    : new Blob([bytes], { type });
}
