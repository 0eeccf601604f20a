/** What a migration manifest signs (docs/manifest.md, "The signed payload"). */

/** The JWS `typ` of a manifest: what tells it apart from any other JWS the archive key signs. */
export const MANIFEST_TYP = 'keyward-migration-manifest+jwt';

/** The name of the tree in the payload: RFC 6962 over SHA-256, leaves the rows' canonical JSON. */
export const TREE_ALG = 'rfc6962-sha256';

/** What a migration was asked to do, as its manifest states it. */
export interface ManifestParameters {
  /** The source: an object-store prefix or the key of a manifest file of object keys. */
  source: string;
  outputPrefix: string;
  /** The kids the outputs were encrypted to. */
  targets: string[];
  /** The kid that re-signed signed content, or null when each signer's own or the archive key did. */
  signer: string | null;
}

/** The signed claims of a manifest. */
export interface ManifestPayload {
  /** The manifest format; a change of the leaf encoding or tree changes it. */
  v: 1;
  migration: string;
  tenant: string;
  parameters: ManifestParameters;
  counts: { total: number; converted: number; refused: number };
  tree: { alg: typeof TREE_ALG; size: number; root: string };
  /** When the manifest was signed (NumericDate, seconds). */
  iat: number;
  /** The signing key, as its JWK names it (`<kid>#<version>`). */
  kid: string;
}
