/**
 * Migration of PKCS#7/CMS files: drop or choose a file, analyze it (archive form, content type,
 * signers, recipients, algorithms, and whether their keys are imported into this tenant), then
 * convert it to JOSE with the conversion's metadata (signerKid, targetKid, verify) and download
 * the result. All through /api/v3/migration/stream/*.
 */
import { call, json } from '../api.js';
import { button, download, field, h, replace, select, table } from '../dom.js';
import { batchSection } from './batch.js';
import { resultBlob, resultName } from '../results.js';

/**
 * A recipient's or signer's identifier in one line.
 * @param {any} id
 */
const identifier = (id) =>
  id.type === 'issuerAndSerialNumber'
    ? `${id.issuer}, serial ${id.serialNumber}`
    : (id.subjectKeyIdentifier ?? id.kekId ?? id.type);

/** The archive forms of the analysis's `container`, as a person names them. */
const CONTAINERS = new Map([
  ['der', 'DER'],
  ['ber', 'BER'],
  ['pem', 'PEM'],
  ['base64', 'base64'],
  ['smime', 'S/MIME'],
  ['multipart-signed', 'S/MIME clear-signed (multipart/signed)'],
]);

/**
 * The archive form in one line: the container, and the CMS encoding inside a wrapper.
 * @param {any} a the analysis
 */
const containerOf = (a) => {
  const form = CONTAINERS.get(a.container) ?? String(a.container ?? a.encoding);
  const inner = a.container === a.encoding ? '' : `, CMS in ${a.encoding.toUpperCase()}`;
  return `${form}${inner}${a.detached ? ', detached content' : ''}`;
};

/**
 * The metadata part of a conversion from the form's fields; empty fields are left out.
 * @param {{ signerKid: string, targetKid: string, verify: string }} v
 */
function metadataOf(v) {
  /** @type {Record<string, unknown>} */
  const m = {};
  if (v.signerKid.trim()) m.signerKid = v.signerKid.trim();
  const targets = v.targetKid
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (targets.length) m.targetKid = targets.length === 1 ? targets[0] : targets;
  if (v.verify) m.verify = v.verify;
  return m;
}

/** @param {import('../main.js').Ui} ui */
export async function renderMigration(ui) {
  ui.title('Migration');
  const input = /** @type {HTMLInputElement} */ (
    h('input', {
      type: 'file',
      accept: '.p7m,.p7s,.p7b,.p7,.cms,.der,.pem,.eml,application/pkcs7-mime,message/rfc822',
    })
  );
  const chosen = h('p', { class: 'hint', id: 'chosen', text: 'No file chosen.' });
  const analysis = h('div', { id: 'analysis', 'aria-live': 'polite' });
  /** @type {File | null} */
  let file = null;

  /** @param {File | null} f */
  const choose = (f) => {
    file = f;
    replace(chosen, f ? `Chosen: ${f.name} (${f.size.toLocaleString()} bytes)` : 'No file chosen.');
    replace(analysis);
  };
  input.addEventListener('change', () => choose(input.files?.[0] ?? null));

  const drop = h(
    'div',
    { class: 'dropzone', 'aria-describedby': 'chosen' },
    h('p', { text: 'Drop a CMS file here, or choose one:' }),
    field('CMS file', input),
    chosen,
  );
  drop.addEventListener('dragover', (event) => {
    event.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    choose(event.dataTransfer?.files?.[0] ?? null);
  });

  const signerKid = /** @type {HTMLInputElement} */ (
    h('input', { type: 'text', name: 'signerKid', autocomplete: 'off' })
  );
  const targetKid = /** @type {HTMLInputElement} */ (
    h('input', { type: 'text', name: 'targetKid', autocomplete: 'off' })
  );
  const verify = /** @type {HTMLSelectElement} */ (
    select(
      [
        ['', 'default (signature)'],
        ['signature', 'signature: with the signer certificate'],
        ['chain', "chain: also up to one of the tenant's trust anchors"],
      ],
      { name: 'verify' },
    )
  );
  const metadata = h(
    'fieldset',
    { class: 'metadata' },
    h('legend', { text: 'Conversion metadata (optional)' }),
    field(
      'Signer kid (signerKid)',
      signerKid,
      "the key that signs the JWS; default: the tenant's archive signing key, else each signer's own",
    ),
    field(
      'Target kids (targetKid)',
      targetKid,
      'who the JWE is for, comma-separated; default: every recipient whose key this tenant holds',
    ),
    field('Signer check (verify)', verify),
  );

  const need = () => {
    if (!file) throw { title: 'No file', detail: 'choose or drop a CMS file first' };
    return file;
  };

  const analyze = button('Analyze', async () => {
    try {
      const f = need();
      const form = new FormData();
      form.append('file', f, f.name);
      const a = await json('POST', '/api/v3/migration/stream/analyze-pkcs7', { form });
      showAnalysis(a);
    } catch (err) {
      ui.fail(err);
    }
  });

  const convert = button('Convert and download', async () => {
    try {
      const f = need();
      const form = new FormData();
      // The service reads metadata first, then the file (README: Conversion).
      const meta = metadataOf({
        signerKid: signerKid.value,
        targetKid: targetKid.value,
        verify: verify.value,
      });
      form.append('metadata', JSON.stringify(meta));
      form.append('file', f, f.name);
      const res = await call('POST', '/api/v3/migration/stream/convert-pkcs7-to-jose', {
        form,
        accept: 'application/json, multipart/mixed, application/octet-stream',
      });
      const type = res.headers.get('content-type') ?? 'application/octet-stream';
      const bytes = await res.arrayBuffer();
      const blob = resultBlob(type, bytes);
      const name = resultName(f.name, type);
      download(blob, name);
      ui.say(
        `Converted ${f.name}: downloaded ${name} (${bytes.byteLength.toLocaleString()} bytes).`,
      );
    } catch (err) {
      ui.fail(err);
    }
  });

  /** @param {any} a */
  function showAnalysis(a) {
    const algorithms = [
      a.contentEncryption ? `content: ${a.contentEncryption.name}` : null,
      ...(a.signers ?? []).map(
        (/** @type {any} */ s) =>
          `signature: ${s.signatureAlgorithm.name} with ${s.digestAlgorithm.name}`,
      ),
      ...(a.recipients ?? []).map(
        (/** @type {any} */ r) => `key transport: ${r.keyEncryptionAlgorithm.name}`,
      ),
    ].filter(Boolean);
    const facts = [
      ['Container', containerOf(a)],
      ['Type', a.contentType],
      ['Inner content', a.innerContentType?.name ?? '—'],
      ['Content length', `${Number(a.contentLength).toLocaleString()} bytes`],
      ['Algorithms', algorithms.join('; ') || '—'],
      // The keys the converter will really use (analyze asks its own lookups), and why not.
      ...(a.signing ? [['Signs with', a.signing.kids.join(', ') || '—']] : []),
      ...(a.decryption ? [['Decrypts with', a.decryption.kid ?? '—']] : []),
      // Analysis checks no signature (signatureChecked false): convert does.
      ...((a.signers ?? []).length && !a.signatureChecked
        ? [['Signature', 'not checked by the analysis; the conversion verifies it']]
        : []),
      [
        'Convertible',
        a.convertible
          ? 'yes'
          : `no: ${a.reason ?? 'a key is missing or an algorithm is not supported'}`,
      ],
    ];
    /** @param {any} x */
    const imported = (x) =>
      x.kid
        ? h('span', { class: 'ok', text: `imported as ${x.kid}` })
        : h('span', { class: 'bad', text: 'not imported' });
    replace(
      analysis,
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'analysis-title' },
        h('h2', { id: 'analysis-title', text: 'Analysis' }),
        h(
          'dl',
          { class: 'facts' },
          ...facts.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]),
        ),
        h('h3', { text: 'Signers' }),
        table(
          'Signers',
          ['Identifier', 'Certificate', 'Algorithm', 'Key'],
          (a.signers ?? []).map((/** @type {any} */ s) => [
            identifier(s.identifier),
            s.certificate?.subject ?? '—',
            s.signatureAlgorithm.name,
            imported(s),
          ]),
          'No signers.',
        ),
        h('h3', { text: 'Recipients' }),
        table(
          'Recipients',
          ['Identifier', 'Certificate', 'Algorithm', 'Key'],
          (a.recipients ?? []).map((/** @type {any} */ r) => [
            identifier(r.identifier),
            r.certificate?.subject ?? '—',
            r.keyEncryptionAlgorithm.name,
            imported(r),
          ]),
          'No recipients.',
        ),
      ),
    );
  }

  ui.root.append(
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'convert-title' },
      h('h2', { id: 'convert-title', text: 'Analyze and convert a CMS file' }),
      drop,
      metadata,
      h('div', { class: 'actions' }, analyze, convert),
    ),
    analysis,
    batchSection(ui),
  );
}
