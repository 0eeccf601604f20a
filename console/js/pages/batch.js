/**
 * Batch conversion through object storage: the chosen files are uploaded under one prefix
 * (PUT /api/v3/migration/uploads/{name}), one job converts them all (POST
 * /api/v3/migration/jobs), and its progress is polled until it ends. Needs the queue (Redis);
 * without it the service answers 503 queue-unavailable, shown as a problem.
 */
import { call, json, seg } from '../api.js';
import { button, download, field, h, replace, table } from '../dom.js';
import { resultBlob, resultName } from '../results.js';

const JOBS = '/api/v3/migration/jobs';

/** @param {import('../main.js').Ui} ui */
export function batchSection(ui) {
  const input = /** @type {HTMLInputElement} */ (h('input', { type: 'file', multiple: true }));
  const status = h('div', { id: 'batch-status', 'aria-live': 'polite' });

  const start = button('Upload and convert', async () => {
    try {
      const files = [...(input.files ?? [])];
      if (files.length === 0)
        throw { title: 'No files', detail: 'choose one or more CMS files first' };
      const folder = `console/${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const bar = h('progress', { max: files.length, value: 0, 'aria-label': 'Upload progress' });
      replace(status, h('p', { text: 'Uploading…' }), bar);
      for (const [i, f] of files.entries()) {
        await call(
          'PUT',
          `/api/v3/migration/uploads/${folder.split('/').map(seg).join('/')}/${seg(f.name)}`,
          {
            body: f,
            contentType: 'application/octet-stream',
          },
        );
        /** @type {HTMLProgressElement} */ (bar).value = i + 1;
      }
      const job = await json('POST', JOBS, {
        json: {
          source: { prefix: `${folder}/` },
          output: { prefix: `converted/${folder}/` },
          metadata: {},
        },
      });
      await follow(job.id);
    } catch (err) {
      replace(status);
      ui.fail(err);
    }
  });

  /** @param {string} id */
  async function follow(id) {
    const bar = h('progress', { max: 1, value: 0, 'aria-label': 'Job progress' });
    const line = h('p', { id: 'batch-line' });
    replace(status, line, bar);
    for (;;) {
      const job = await json('GET', `${JOBS}/${seg(id)}`);
      const p = job.progress ?? {};
      /** @type {HTMLProgressElement} */ (bar).max = Math.max(1, p.objectsTotal ?? 1);
      /** @type {HTMLProgressElement} */ (bar).value =
        (p.objectsDone ?? 0) + (p.objectsFailed ?? 0);
      replace(
        line,
        `Job ${job.id}: ${job.state}, ${p.objectsDone ?? 0} done, ${p.objectsFailed ?? 0} failed of ${p.objectsTotal ?? '?'}.`,
      );
      if (!['queued', 'active', 'retrying', 'cancelling'].includes(job.state)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const children = await json('GET', `${JOBS}/${seg(id)}/children`).catch(() => ({ items: [] }));
    status.append(
      table(
        'Converted files',
        ['Source', 'State', 'Result'],
        children.items.map((/** @type {any} */ c) => [
          c.source?.key ?? '—',
          c.state,
          c.state === 'completed'
            ? button(
                'Download',
                async () => {
                  const res = await call('GET', `${JOBS}/${seg(c.id)}/result`, { accept: '*/*' });
                  const type = res.headers.get('content-type') ?? 'application/octet-stream';
                  const source =
                    String(c.source?.key ?? c.id)
                      .split('/')
                      .pop() ?? 'result';
                  download(resultBlob(type, await res.arrayBuffer()), resultName(source, type));
                },
                { 'aria-label': `Download the result of ${c.source?.key ?? c.id}` },
              )
            : c.problem
              ? `${c.problem.title}: ${c.problem.detail ?? ''}`
              : '—',
        ]),
        'No files were converted.',
      ),
    );
  }

  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'batch-title' },
    h('h2', { id: 'batch-title', text: 'Batch conversion' }),
    h('p', {
      class: 'hint',
      text: 'Many files at once, converted by the queue workers through object storage.',
    }),
    field('CMS files for the batch', input),
    start,
    status,
  );
}
