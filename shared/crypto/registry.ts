/**
 * The key-type table: one row per key type the service can hold, saying what the key is
 * (family, size), what it may do (usages), how it is made (Node key type, curve) and which
 * JOSE algorithms it speaks by default. Everything else in shared/crypto dispatches on a row,
 * never on a type string.
 */
import { problem } from '../errors/index.ts';

export type KeyFamily =
  'aes' | 'hmac' | 'rsa' | 'ec' | 'okp' | 'ml-kem' | 'ml-dsa' | 'slh-dsa' | 'hybrid';
/**
 * What a key may do: encrypt (and unwrap), sign (and verify), or compute and check MACs; `verify`
 * is a certificate imported without its private key (an outside signer's): it only
 * verifies, and is never offered for signing or decrypting.
 */
export type KeyUsage = 'encrypt' | 'sign' | 'mac' | 'verify';

/** JOSE names of the signature algorithms (RFC 7518 section 3, draft-ietf-cose-dilithium, draft-ietf-cose-sphincs-plus). */
export type SignatureAlgorithm =
  | 'RS256'
  | 'RS384'
  | 'RS512'
  | 'PS256'
  | 'PS384'
  | 'PS512'
  | 'ES256'
  | 'ES384'
  | 'ES512'
  | 'EdDSA'
  | 'ML-DSA-44'
  | 'ML-DSA-65'
  | 'ML-DSA-87'
  | `SLH-DSA-${'SHA2' | 'SHAKE'}-${128 | 192 | 256}${'s' | 'f'}`;

export type ContentEncryption = 'A128GCM' | 'A192GCM' | 'A256GCM';
export type KeyManagement =
  'dir' | 'RSA-OAEP-256' | 'ECDH-ES' | 'ECDH-ES+A128KW' | 'ECDH-ES+A192KW' | 'ECDH-ES+A256KW';

/** JOSE names of the MAC algorithms (RFC 7518 section 3.2). */
export type MacAlgorithm = 'HS256' | 'HS384' | 'HS512';

/** One row of the key-type table. */
/** The runtime operations of the Core and PQC APIs (api/services/crypto/runtime.ts). */
export type RuntimeOp = 'encrypt' | 'decrypt' | 'sign' | 'verify' | 'encapsulate' | 'decapsulate';
const EVERY_OP: readonly RuntimeOp[] = [
  'encrypt',
  'decrypt',
  'sign',
  'verify',
  'encapsulate',
  'decapsulate',
];

export interface KeyTypeSpec {
  readonly type: KeyType;
  readonly family: KeyFamily;
  /** The size in the family's own unit: AES and HMAC key bits, RSA modulus bits, EC field bits, or the PQC parameter set (768, 65, 128). */
  readonly bits: number;
  /** The material is one secret byte string of `bits / 8` bytes (AES, HMAC): no public part, no JWK, no PEM. */
  readonly symmetric?: true;
  readonly usages: readonly KeyUsage[];
  readonly defaultUsage: KeyUsage;
  /** Generation takes long enough (tens of ms or more) to belong in the worker pool. */
  readonly slowGeneration: boolean;
  /** The `type` argument of crypto.generateKeyPair; absent for AES and the hybrid. */
  readonly nodeKeyType?:
    | 'rsa'
    | 'rsa-pss'
    | 'ec'
    | 'ed25519'
    | 'ed448'
    | 'x25519'
    | 'x448'
    | `ml-kem-${number}`
    | `ml-dsa-${number}`
    | `slh-dsa-${string}`;
  /** The JOSE curve name of EC keys, and of the `ec` component of a hybrid. */
  readonly curve?: 'P-256' | 'P-384' | 'P-521';
  /** Default JWE algorithms for keys with the `encrypt` usage (none for ML-KEM and the hybrid: they encapsulate). */
  readonly jwe?: { readonly alg: KeyManagement; readonly enc: ContentEncryption };
  /** JWS algorithms for keys with the `sign` usage, the default first. */
  readonly jws?: readonly SignatureAlgorithm[];
  /** HMAC keys: the JOSE algorithm and the node hash it computes. */
  readonly mac?: { readonly alg: MacAlgorithm; readonly hash: 'sha256' | 'sha384' | 'sha512' };
  /** Hybrid keys: the component key types, in the order their bytes are concatenated. */
  readonly components?: readonly ('ml-kem-768' | 'ml-kem-1024' | 'x25519' | 'ec')[];
  /** Post-quantum (ML-KEM, ML-DSA, SLH-DSA, the ML-KEM hybrids): what /api/v3/pqc serves and lists. */
  readonly pqc?: true;
  /**
   * The runtime operations the event loop serves; the others run in the worker pool. Measured
   * (api/services/crypto/placement.ts): under ~100 µs stays, a hop to the pool costs about as much.
   */
  readonly onLoop: readonly RuntimeOp[];
  /** Operations on a caller's digest run in the pool even when `onLoop` names them (pure-JS ECDSA). */
  readonly digestInPool?: true;
}

const SLH_DSA_VARIANTS = [
  'sha2-128s',
  'sha2-128f',
  'sha2-192s',
  'sha2-192f',
  'sha2-256s',
  'sha2-256f',
  'shake-128s',
  'shake-128f',
  'shake-192s',
  'shake-192f',
  'shake-256s',
  'shake-256f',
] as const;

export const KEY_TYPES = [
  'aes-128',
  'aes-256',
  'hmac-sha256',
  'hmac-sha384',
  'hmac-sha512',
  'rsa-2048',
  'rsa-3072',
  'rsa-4096',
  'rsa-pss-2048',
  'rsa-pss-3072',
  'rsa-pss-4096',
  'ec-p256',
  'ec-p384',
  'ec-p521',
  'ed25519',
  'ed448',
  'x25519',
  'x448',
  'ml-kem-768',
  'ml-kem-1024',
  'ml-dsa-44',
  'ml-dsa-65',
  'ml-dsa-87',
  ...SLH_DSA_VARIANTS.map((v) => `slh-dsa-${v}` as const),
  'x25519-ml-kem-768',
  'p256-ml-kem-768',
  'p384-ml-kem-1024',
] as const;

export type KeyType = (typeof KEY_TYPES)[number];

const RSA_JWS: readonly SignatureAlgorithm[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
];

/** RSA verifies and encrypts under the loop's bound; signing and OAEP decryption take longer (bench/results/design-figures.md). */
const RSA_ON_LOOP: readonly RuntimeOp[] = ['encrypt', 'verify', 'encapsulate', 'decapsulate'];

function aes(bits: 128 | 256): KeyTypeSpec {
  return {
    type: `aes-${bits}`,
    family: 'aes',
    bits,
    symmetric: true,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    jwe: { alg: 'dir', enc: bits === 128 ? 'A128GCM' : 'A256GCM' },
    onLoop: EVERY_OP,
  };
}

/**
 * HMAC keys are random secrets as long as the hash output (32, 48 or 64 bytes): RFC 2104 section 3
 * calls less than L bytes weak and more than L no stronger, and RFC 7518 section 3.2 requires a key
 * at least as long as the output for HS256/384/512. All three stay within the hash's block size
 * (64 or 128 bytes), so HMAC uses the key as it is instead of hashing it first.
 */
function hmac(bits: 256 | 384 | 512): KeyTypeSpec {
  return {
    type: `hmac-sha${bits}`,
    family: 'hmac',
    bits,
    symmetric: true,
    usages: ['mac'],
    defaultUsage: 'mac',
    slowGeneration: false,
    mac: { alg: `HS${bits}`, hash: `sha${bits}` },
    onLoop: [],
  };
}

function rsa(bits: 2048 | 3072 | 4096): KeyTypeSpec {
  return {
    type: `rsa-${bits}`,
    family: 'rsa',
    bits,
    usages: ['encrypt', 'sign'],
    defaultUsage: 'encrypt',
    slowGeneration: bits > 2048,
    nodeKeyType: 'rsa',
    jwe: { alg: 'RSA-OAEP-256', enc: 'A256GCM' },
    jws: RSA_JWS,
    onLoop: RSA_ON_LOOP,
  };
}

/**
 * RSASSA-PSS keys (id-RSASSA-PSS, RFC 4055 section 1.2): RSA numbers bound to PSS signatures, so
 * they only sign, and only PS*. Imported ones whose parameters name a hash sign only the PS* of
 * that hash (rsa-pss.ts); generated ones are unrestricted.
 */
function rsaPss(bits: 2048 | 3072 | 4096): KeyTypeSpec {
  return {
    type: `rsa-pss-${bits}`,
    family: 'rsa',
    bits,
    usages: ['sign'],
    defaultUsage: 'sign',
    slowGeneration: bits > 2048,
    nodeKeyType: 'rsa-pss',
    jws: ['PS256', 'PS384', 'PS512'],
    onLoop: RSA_ON_LOOP,
  };
}

function ec(bits: 256 | 384 | 521): KeyTypeSpec {
  const curve = `P-${bits}` as const;
  const alg = ({ 256: 'ES256', 384: 'ES384', 521: 'ES512' } as const)[bits];
  return {
    type: `ec-p${bits}`,
    family: 'ec',
    bits,
    usages: ['encrypt', 'sign'],
    defaultUsage: 'sign',
    slowGeneration: false,
    nodeKeyType: 'ec',
    curve,
    jwe: { alg: 'ECDH-ES+A256KW', enc: 'A256GCM' },
    jws: [alg],
    // P-256 signs and verifies under the loop's bound; ECDH-ES, P-384 and P-521 take longer
    // (bench/results/design-figures.md).
    ...(bits === 256 ? { onLoop: ['sign', 'verify'], digestInPool: true } : { onLoop: [] }),
  };
}

function xdh(curve: 25519 | 448): KeyTypeSpec {
  return {
    type: `x${curve}`,
    family: 'okp',
    bits: curve === 25519 ? 256 : 448,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    nodeKeyType: `x${curve}`,
    onLoop: [],
  };
}

function mlKem(bits: 768 | 1024): KeyTypeSpec {
  return {
    type: `ml-kem-${bits}`,
    family: 'ml-kem',
    bits,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    nodeKeyType: `ml-kem-${bits}`,
    pqc: true,
    onLoop: EVERY_OP,
  };
}

function mlDsa(bits: 44 | 65 | 87): KeyTypeSpec {
  return {
    type: `ml-dsa-${bits}`,
    family: 'ml-dsa',
    bits,
    usages: ['sign'],
    defaultUsage: 'sign',
    slowGeneration: false,
    nodeKeyType: `ml-dsa-${bits}`,
    jws: [`ML-DSA-${bits}`],
    pqc: true,
    onLoop: EVERY_OP.filter((op) => op !== 'sign'),
  };
}

function slhDsa(variant: (typeof SLH_DSA_VARIANTS)[number]): KeyTypeSpec {
  const [hash, set] = variant.split('-') as [string, string];
  const alg = `SLH-DSA-${hash.toUpperCase()}-${set}` as SignatureAlgorithm;
  return {
    type: `slh-dsa-${variant}`,
    family: 'slh-dsa',
    bits: Number.parseInt(set, 10),
    usages: ['sign'],
    defaultUsage: 'sign',
    slowGeneration: true,
    nodeKeyType: `slh-dsa-${variant}`,
    jws: [alg],
    pqc: true,
    onLoop: [],
  };
}

const ROWS: readonly KeyTypeSpec[] = [
  aes(128),
  aes(256),
  hmac(256),
  hmac(384),
  hmac(512),
  rsa(2048),
  rsa(3072),
  rsa(4096),
  rsaPss(2048),
  rsaPss(3072),
  rsaPss(4096),
  ec(256),
  ec(384),
  ec(521),
  {
    type: 'ed25519',
    family: 'okp',
    bits: 256,
    usages: ['sign'],
    defaultUsage: 'sign',
    slowGeneration: false,
    nodeKeyType: 'ed25519',
    jws: ['EdDSA'],
    onLoop: EVERY_OP,
  },
  // Ed448 (RFC 8032): EdDSA with crv Ed448 in JOSE (RFC 8037).
  {
    type: 'ed448',
    family: 'okp',
    bits: 448,
    usages: ['sign'],
    defaultUsage: 'sign',
    slowGeneration: false,
    nodeKeyType: 'ed448',
    jws: ['EdDSA'],
    onLoop: [], // not measured yet: the pool
  },
  // X25519 and X448 (RFC 7748) agree keys: CMS key agreement recipients (RFC 8418), no JWE of their own.
  xdh(25519),
  xdh(448),
  mlKem(768),
  mlKem(1024),
  mlDsa(44),
  mlDsa(65),
  mlDsa(87),
  ...SLH_DSA_VARIANTS.map(slhDsa),
  // X-Wing (draft-connolly-cfrg-xwing-kem): ML-KEM-768 and X25519 behind one SHA3-256 combiner, see pqc.ts.
  {
    type: 'x25519-ml-kem-768',
    family: 'hybrid',
    bits: 768,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    components: ['ml-kem-768', 'x25519'],
    pqc: true,
    onLoop: [],
  },
  // MLKEM768-P256 and MLKEM1024-P384 (draft-irtf-cfrg-concrete-hybrid-kems): the same combiner
  // with a NIST curve, for the HPKE suites HPKE-8 and HPKE-10; see pqc.ts.
  {
    type: 'p256-ml-kem-768',
    family: 'hybrid',
    bits: 768,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    components: ['ml-kem-768', 'ec'],
    curve: 'P-256',
    pqc: true,
    onLoop: [],
  },
  {
    type: 'p384-ml-kem-1024',
    family: 'hybrid',
    bits: 1024,
    usages: ['encrypt'],
    defaultUsage: 'encrypt',
    slowGeneration: false,
    components: ['ml-kem-1024', 'ec'],
    curve: 'P-384',
    pqc: true,
    onLoop: [],
  },
];

/** The post-quantum key types (the `pqc` column), for listings that filter by type. */
export const PQC_KEY_TYPES: readonly KeyType[] = ROWS.filter((r) => r.pqc).map((r) => r.type);

/** The key-type table, frozen. */
export const KEY_TYPE_SPECS: Readonly<Record<KeyType, KeyTypeSpec>> = Object.freeze(
  Object.fromEntries(ROWS.map((row) => [row.type, Object.freeze(row)])) as Record<
    KeyType,
    KeyTypeSpec
  >,
);

/** True when `value` names a key type of the table. */
export function isKeyType(value: unknown): value is KeyType {
  return typeof value === 'string' && Object.hasOwn(KEY_TYPE_SPECS, value);
}

/** The row of a key type; an unknown type is a validation failure naming the known ones. */
export function keyTypeSpec(type: string): KeyTypeSpec {
  if (!isKeyType(type)) {
    throw problem('validation_failed', `unknown key type: ${String(type)}`, {
      details: { allowed: [...KEY_TYPES] },
    });
  }
  return KEY_TYPE_SPECS[type];
}

/** The usage a new key gets: the requested one when the type allows it, else the type's default. */
export function resolveUsage(type: KeyType, requested?: string): KeyUsage {
  const spec = KEY_TYPE_SPECS[type];
  if (requested === undefined) return spec.defaultUsage;
  if (!(spec.usages as readonly string[]).includes(requested)) {
    throw problem('key_usage_mismatch', `key type ${type} cannot be used to ${requested}`, {
      details: { allowed: [...spec.usages] },
    });
  }
  return requested as KeyUsage;
}

/**
 * The one usage check of every key use: throws key_usage_mismatch unless the key's enabled usages
 * (`usages`; a key that records none has its one `usage`) include `needed` and its type can do it.
 * A key record that forgets `usages` is checked against `usage` alone, so it can only refuse more.
 */
export function assertUsage(
  key: { type: KeyType; usage: KeyUsage; usages?: readonly KeyUsage[]; kid?: string },
  needed: KeyUsage,
): void {
  const spec = KEY_TYPE_SPECS[key.type];
  const allowed = needed === 'verify' ? spec.symmetric !== true : spec.usages.includes(needed);
  const enabled = key.usages ?? [key.usage];
  if (!enabled.includes(needed) || !allowed) {
    throw problem(
      'key_usage_mismatch',
      `key ${key.kid ?? key.type} has usage ${enabled.join(' and ')}, not ${needed}`,
      {
        details: {
          ...(key.kid !== undefined ? { kid: key.kid } : {}),
          usage: key.usage,
          usages: [...enabled],
          needed,
        },
      },
    );
  }
}

/** The usages in the type table's order (encrypt before sign), without repeats. */
export function orderedUsages(type: KeyType, usages: Iterable<KeyUsage>): KeyUsage[] {
  const set = new Set(usages);
  const order: readonly KeyUsage[] = [...KEY_TYPE_SPECS[type].usages, 'verify'];
  return order.filter((u) => set.has(u));
}

/** The key's one `usage` (JWK `use`, AWS KeyUsage, listings): the type's default when enabled, else the first enabled. */
export function primaryUsage(type: KeyType, usages: readonly KeyUsage[]): KeyUsage {
  const d = KEY_TYPE_SPECS[type].defaultUsage;
  return usages.includes(d) ? d : usages[0];
}

/** What a JWS algorithm needs: the digest (null for the schemes that sign the message itself) and its length. */
export interface SignatureAlgorithmSpec {
  readonly family: 'rsa' | 'ec' | 'okp' | 'ml-dsa' | 'slh-dsa';
  readonly hash: 'sha256' | 'sha384' | 'sha512' | null;
  readonly padding?: 'pkcs1' | 'pss';
}

const HASH_OF = { 256: 'sha256', 384: 'sha384', 512: 'sha512' } as const;

/** Looks up a JOSE signature algorithm, or undefined for names outside the table. */
export function signatureAlgorithmSpec(alg: string): SignatureAlgorithmSpec | undefined {
  const m = /^(RS|PS|ES)(256|384|512)$/.exec(alg);
  if (m) {
    const hash = HASH_OF[m[2] as '256' | '384' | '512'];
    if (m[1] === 'ES') return { family: 'ec', hash };
    return { family: 'rsa', hash, padding: m[1] === 'RS' ? 'pkcs1' : 'pss' };
  }
  if (alg === 'EdDSA') return { family: 'okp', hash: null };
  if (/^ML-DSA-(44|65|87)$/.test(alg)) return { family: 'ml-dsa', hash: null };
  if (/^SLH-DSA-(SHA2|SHAKE)-(128|192|256)[sf]$/.test(alg))
    return { family: 'slh-dsa', hash: null };
  return undefined;
}

/** Other spellings accepted for a signature algorithm: the AWS KMS SigningAlgorithmSpec names and RFC 9864's Ed25519. */
export const SIGNATURE_ALGORITHM_ALIASES: Readonly<Record<string, SignatureAlgorithm>> =
  Object.freeze({
    RSASSA_PKCS1_V1_5_SHA_256: 'RS256',
    RSASSA_PKCS1_V1_5_SHA_384: 'RS384',
    RSASSA_PKCS1_V1_5_SHA_512: 'RS512',
    RSASSA_PSS_SHA_256: 'PS256',
    RSASSA_PSS_SHA_384: 'PS384',
    RSASSA_PSS_SHA_512: 'PS512',
    ECDSA_SHA_256: 'ES256',
    ECDSA_SHA_384: 'ES384',
    ECDSA_SHA_512: 'ES512',
    Ed25519: 'EdDSA',
  });
