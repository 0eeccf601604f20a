/**
 * GET /problems/:slug: the page a problem's `type` URL names (RFC 9457 section 3.1.1: the type
 * URI should resolve to documentation for humans). One short page per catalogued problem, made
 * from the catalogue's title and help line: HTML by default, JSON for Accept: application/json.
 *
 * Tests: test/integration/problems.test.ts, test/integration/http/error-middleware.test.ts,
 *   test/integration/migration/archive-forms.test.ts, test/integration/migration/bad-inputs.test.ts,
 *   test/integration/migration/several-recipients.test.ts
 */
import Type from 'typebox';
import { PROBLEMS, problem, type ProblemSpec } from '../../shared/errors/index.ts';
import { endpoint } from '../rows/endpoint.ts';
import { Resource } from '../schemas/common.ts';

// Several codes may share a page; a slug request never indexes a plain object (a slug of `constructor` would find its prototype's).
const BY_SLUG = new Map<string, ProblemSpec>(
  Object.values(PROBLEMS).map((spec: ProblemSpec) => [spec.slug, spec]),
);

// Nothing runs and nothing loads: the page is text and two links.
const CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

/** The HTML page of one problem. */
function page(spec: ProblemSpec, type: string): string {
  const [title, help, status, uri] = [spec.title, spec.help, String(spec.status), type].map(
    escapeHtml,
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} (${status}) · Keyward</title>
</head>
<body>
<h1>${title}</h1>
<p>HTTP status ${status}. Problem type <code>${uri}</code>.</p>
<p>${help}</p>
<p>The response body carries a <code>detail</code> member about this request; see the <a href="../docs">API reference</a>.</p>
</body>
</html>
`;
}

const SLUGS = [...BY_SLUG.keys()];

/** A problem type's page as JSON (Accept: application/json). */
const ProblemType = Resource(
  {
    type: Type.String({ format: 'uri', description: 'this page: the `type` of the problem' }),
    title: Type.String(),
    status: Type.Integer(),
    description: Type.String({ description: 'what the problem means and what to do' }),
  },
  {
    type: 'http://127.0.0.1:8080/problems/key-suspended',
    title: 'Key Suspended',
    status: 409,
    description: PROBLEMS.key_suspended.help,
  },
);

/** Mounted at /problems: one page per catalogued slug. */
export const PROBLEM_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/:slug',
    operationId: 'problemType',
    tag: 'system',
    summary: 'The page a problem `type` URL names: what the problem means and what to do',
    description:
      'One page per problem of the catalogue, HTML by default and JSON for `Accept: application/json`.',
    access: { open: 'the `type` of every problem links here, for anyone who reads one' },
    params: Type.Object({ slug: Type.Enum(SLUGS, { examples: ['key-suspended'] }) }),
    notFound: 'no problem type has this name',
    answer: {
      status: 200,
      description: 'the page',
      // The page, or its JSON form when the request's Accept prefers JSON.
      content: {
        'text/html': {
          schema: Type.String({
            examples: [
              '<!doctype html><html lang="en">...<h1>Key Suspended</h1><p>HTTP status 409. ...</p>...',
            ],
          }),
        },
        'application/json': { schema: ProblemType },
      },
    },
    problems: { 404: 'no problem type has this name' },
    handle: (ctx, { params, req, res }) => {
      const spec = BY_SLUG.get(params.slug);
      if (!spec) throw problem('not_found', 'no problem type has this name');
      const type = `${ctx.config.publicBaseUrl}/problems/${spec.slug}`;
      res.setHeader('Cache-Control', 'public, max-age=3600');
      res.vary('Accept');
      if (req.accepts(['html', 'json']) === 'json') {
        res.json({ type, title: spec.title, status: spec.status, description: spec.help });
        return;
      }
      res.setHeader('Content-Security-Policy', CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.type('html').send(page(spec, type));
    },
  }),
];
