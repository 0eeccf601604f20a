/**
 * Every post-quantum JOSE identifier this service writes into an output, with the document and
 * version it comes from. Labels from a draft can still move: a renumbering is one edit of a row
 * here, then a re-wrap of the stored outputs (stream re-encrypt), as docs/post-quantum.md says.
 * The readers accept exactly what is written, so nothing here is guessed on input.
 */

/** Where a label is defined: an RFC (settled) or an Internet-Draft at one version. */
export interface LabelSource {
  readonly document: string;
  /** 'rfc' is settled; 'draft' may still be renumbered before publication. */
  readonly status: 'rfc' | 'draft';
}

const RFC9964: LabelSource = { document: 'RFC 9964 (ML-DSA for JOSE and COSE)', status: 'rfc' };
const HPKE_PQ: LabelSource = { document: 'draft-ietf-jose-hpke-pq-pqt-00', status: 'draft' };
const HPKE_ENCRYPT: LabelSource = { document: 'draft-ietf-jose-hpke-encrypt-20', status: 'draft' };

/** The key types of the HPKE suites, as the key catalogue names them. */
export type HpkeKeyType =
  'x25519-ml-kem-768' | 'p256-ml-kem-768' | 'p384-ml-kem-1024' | 'ml-kem-768' | 'ml-kem-1024';

/** One HPKE ciphersuite as JOSE names it: the Integrated and Key Encryption `alg` values. */
export interface HpkeSuiteLabels {
  readonly integrated: string;
  readonly keyEncryption: string;
  /** HPKE identifiers (draft-ietf-hpke-hpke, draft-ietf-hpke-pq): KEM, KDF, AEAD. */
  readonly kemId: number;
  readonly kdfId: number;
  readonly aeadId: number;
  readonly source: LabelSource;
  /**
   * Labels this suite had in earlier drafts, still read (never written) so stored outputs open
   * until stream re-encrypt has re-wrapped them under the current label.
   */
  readonly formerly?: readonly string[];
}

/**
 * The HPKE suites of draft-ietf-jose-hpke-pq-pqt, by the key type that receives them. All use
 * SHAKE256 (0x0011) and AES-256-GCM (0x0002); the KEM ids are draft-ietf-hpke-pq's (MLKEM768-X25519
 * 0x647a, MLKEM768-P256 0x0050, MLKEM1024-P384 0x0051, ML-KEM-768 0x0041, ML-KEM-1024 0x0042). Map: a key type is looked up, never a request value.
 */
export const HPKE_SUITES: ReadonlyMap<HpkeKeyType, HpkeSuiteLabels> = new Map([
  [
    'x25519-ml-kem-768',
    {
      integrated: 'HPKE-9',
      keyEncryption: 'HPKE-9-KE',
      kemId: 0x647a,
      kdfId: 0x0011,
      aeadId: 0x0002,
      source: HPKE_PQ,
    },
  ],
  [
    'p256-ml-kem-768',
    {
      integrated: 'HPKE-8',
      keyEncryption: 'HPKE-8-KE',
      kemId: 0x0050,
      kdfId: 0x0011,
      aeadId: 0x0002,
      source: HPKE_PQ,
    },
  ],
  [
    'p384-ml-kem-1024',
    {
      integrated: 'HPKE-10',
      keyEncryption: 'HPKE-10-KE',
      kemId: 0x0051,
      kdfId: 0x0011,
      aeadId: 0x0002,
      source: HPKE_PQ,
    },
  ],
  [
    'ml-kem-768',
    {
      integrated: 'HPKE-12',
      keyEncryption: 'HPKE-12-KE',
      kemId: 0x0041,
      kdfId: 0x0011,
      aeadId: 0x0002,
      source: HPKE_PQ,
    },
  ],
  [
    'ml-kem-1024',
    {
      integrated: 'HPKE-13',
      keyEncryption: 'HPKE-13-KE',
      kemId: 0x0042,
      kdfId: 0x0011,
      aeadId: 0x0002,
      source: HPKE_PQ,
    },
  ],
]);

/** The JWS `alg` values of ML-DSA keys and the `AKP` key type they are published with. */
export const ML_DSA_ALGS: ReadonlyMap<string, LabelSource> = new Map([
  ['ML-DSA-44', RFC9964],
  ['ML-DSA-65', RFC9964],
  ['ML-DSA-87', RFC9964],
]);

/**
 * Header members and structures, besides `alg` values: `kty: "AKP"` (RFC 9964 section 3), the
 * `ek` header and the Recipient_structure label of Key Encryption (draft-ietf-jose-hpke-encrypt
 * sections 3.1 and 6.1), and the member that records a deliberately mixed recipient list.
 */
export const PQ_MEMBERS = {
  akp: { label: 'AKP', source: RFC9964 },
  ek: { label: 'ek', source: HPKE_ENCRYPT },
  recipientStructure: { label: 'JOSE-HPKE rcpt', source: HPKE_ENCRYPT },
  // Not a registered header: ours, so a reader sees that the sender chose to mix on purpose.
  mixedRecipients: {
    label: 'keyward_mixed_recipients',
    source: { document: 'this service (docs/post-quantum.md)', status: 'rfc' },
  },
} as const satisfies Record<string, { label: string; source: LabelSource }>;

const BY_ALG = new Map<string, { type: HpkeKeyType; mode: 'integrated' | 'key-encryption' }>(
  [...HPKE_SUITES].flatMap(([type, s]) => [
    [s.integrated, { type, mode: 'integrated' as const }],
    [s.keyEncryption, { type, mode: 'key-encryption' as const }],
    ...(s.formerly ?? []).map(
      (alg) =>
        [
          alg,
          {
            type,
            mode: alg.endsWith('-KE') ? ('key-encryption' as const) : ('integrated' as const),
          },
        ] as const,
    ),
  ]),
);

/** The key type and mode an HPKE `alg` names, or undefined for any other value. */
export function hpkeAlg(
  alg: unknown,
): { type: HpkeKeyType; mode: 'integrated' | 'key-encryption' } | undefined {
  return typeof alg === 'string' ? BY_ALG.get(alg) : undefined;
}

/** The HPKE suite of a key type, or undefined when the type receives no HPKE JWE. */
export function hpkeSuiteOf(type: string): HpkeSuiteLabels | undefined {
  return HPKE_SUITES.get(type as HpkeKeyType);
}
