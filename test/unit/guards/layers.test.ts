import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import {
  brokenRule,
  LAYER_RULES,
  layersPlugin,
  ROUTE_TABLE,
} from '../../../scripts/guards/layers.ts';

const CWD = '/project';
const linter = new Linter({ cwd: CWD });
const config = [
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { keyward: layersPlugin },
    rules: { 'keyward/layers': 'error' as const },
  },
];

/** The layer messages ESLint reports for `code` written in the project file `file`. */
function lint(file: string, code: string): string[] {
  return linter
    .verify(code, config, { filename: `${CWD}/${file}` })
    .map((message) => message.message);
}

describe('scripts/guards/layers: the import rules per folder', () => {
  it('when a worker or a shared module imports api/, even for a type, then lint names the import and the rule', () => {
    expect(
      lint('workers/jobs/convert.ts', "import { x } from '../../api/services/keys/store.ts';"),
    ).toEqual([
      "'../../api/services/keys/store.ts' is not importable from workers/jobs/convert.ts: workers/ and shared/ never import api/: what both sides need lives in shared/.",
    ]);
    expect(
      lint('shared/keys/cache.ts', "import type { Deps } from '../../api/context.ts';"),
    ).toHaveLength(1);
    expect(lint('shared/keys/cache.ts', "export { y } from '../../api/context.ts';")).toHaveLength(
      1,
    );
    expect(
      lint('shared/keys/cache.ts', "type T = import('../../api/context.ts').Deps;"),
    ).toHaveLength(1);
    expect(
      lint('shared/keys/cache.ts', "const m = await import('../../api/context.ts');"),
    ).toHaveLength(1);
  });

  it('when a worker or a shared module imports shared/ or a package, then lint is silent', () => {
    expect(
      lint(
        'workers/jobs/convert.ts',
        "import { k } from '../../shared/keys/index.ts';\nimport express from 'express';",
      ),
    ).toEqual([]);
  });

  it('when a service imports express, a route, middleware or the http edge, then each is reported', () => {
    const code = [
      "import type { Request } from 'express';",
      "import { r } from '../../routes/v3/crypto/encrypt.ts';",
      "import { a } from '../../middleware/authenticate.ts';",
      "import { j } from '../../http/json.ts';",
      "import { s } from '../../../shared/keys/index.ts';",
      "import { o } from './other.ts';",
    ].join('\n');
    expect(lint('api/services/keys/store.ts', code)).toHaveLength(4);
  });

  it('when a route imports another route, then it is reported, except from the one mounting table', () => {
    const code =
      "import { createEncryptRouter } from './encrypt.ts';\nimport { run } from '../../../services/crypto/runtime.ts';";
    expect(lint('api/routes/v3/crypto/decrypt.ts', code)).toHaveLength(1);
    expect(
      lint(
        ROUTE_TABLE,
        "import { r } from './v3/crypto/encrypt.ts';\nimport { l } from './legacy/migration.ts';",
      ),
    ).toEqual([]);
  });

  it('when the API or shared/ imports workers/, then it is reported: workers/ is the queue worker process', () => {
    expect(lint('api/context.ts', "import { createPool } from '../workers/pool.ts';")).toEqual([
      "'../workers/pool.ts' is not importable from api/context.ts: workers/ is the queue worker process: the API's threads live in api/threads/, what both processes run in shared/.",
    ]);
    expect(
      lint('shared/keys/cache.ts', "import type { J } from '../../workers/jobs/convert.ts';"),
    ).toHaveLength(1);
    expect(lint('api/context.ts', "import { createPool } from './threads/pool.ts';")).toEqual([]);
  });

  it('when a thread file imports the process context, a service or the HTTP edge, then it is reported; shared/ is its to use', () => {
    const code = [
      "import type { AppContext } from '../../context.ts';",
      "import { store } from '../../services/keys/store.ts';",
      "import { json } from '../../http/json-body.ts';",
      "import { k } from '../../../shared/crypto/sign.ts';",
      "import { p } from './password.ts';",
    ].join('\n');
    expect(lint('api/threads/tasks/crypto.ts', code)).toHaveLength(3);
  });

  it('when an access check imports express, the HTTP edge or middleware, then it is reported; services and shared/ are its to use', () => {
    const code = [
      "import type { Request } from 'express';",
      "import { r } from '../http/route.ts';",
      "import { a } from '../middleware/authenticate.ts';",
      "import type { AccessClaims } from '../services/auth/access-tokens.ts';",
      "import { problem } from '../../shared/errors/index.ts';",
    ].join('\n');
    expect(lint('api/access/checks.ts', code)).toHaveLength(3);
  });

  it('when the HTTP edge imports an Express adapter of middleware/, then it is reported; the access checks are its to use', () => {
    expect(
      lint('api/rows/endpoint.ts', "import { authorize } from '../middleware/authenticate.ts';"),
    ).toHaveLength(1);
    expect(
      lint('api/rows/endpoint.ts', "import { attemptOf } from '../access/checks.ts';"),
    ).toEqual([]);
    expect(
      lint('api/middleware/errors.ts', "import { clientGone } from '../http/access-log.ts';"),
    ).toEqual([]);
    expect(
      lint('api/middleware/errors.ts', "import { r } from '../routes/index.ts';"),
    ).toHaveLength(1);
  });

  it('when the transport imports the row framework or a schema imports anything but TypeBox, then it is reported; rows, services and route files share the schemas', () => {
    expect(lint('api/http/json-body.ts', "import { e } from '../rows/endpoint.ts';")).toHaveLength(
      1,
    );
    expect(
      lint('api/schemas/keys.ts', "import { s } from '../services/keys/store.ts';"),
    ).toHaveLength(1);
    expect(lint('api/schemas/keys.ts', "import Type from 'typebox';")).toEqual([]);
    expect(
      lint('api/services/keys/store.ts', "import { K } from '../../schemas/keys.ts';"),
    ).toEqual([]);
    expect(
      lint('api/services/keys/store.ts', "import { e } from '../../rows/endpoint.ts';"),
    ).toHaveLength(1);
  });

  it('when a route file imports another route file, then it is reported; what route files share is under routes/shared/', () => {
    expect(lint('api/routes/v3/pqc.ts', "import { r } from './audit.ts';")).toHaveLength(1);
    expect(lint('api/routes/v3/pqc.ts', "import { o } from '../shared/operations.ts';")).toEqual(
      [],
    );
    expect(lint('api/routes/shared/audit.ts', "import { r } from '../v3/pqc.ts';")).toHaveLength(1);
  });

  it('when the CLI imports api/, then it is reported; test files are not bound by the rules', () => {
    expect(lint('bin/lib/client.ts', "import { createApp } from '../../api/app.ts';")).toHaveLength(
      1,
    );
    expect(
      lint('test/integration/app.test.ts', "import { createApp } from '../../api/app.ts';"),
    ).toEqual([]);
  });

  it('when a bench, a script or support/ imports test/, then it is reported; support/ is theirs to share, and tests may use it', () => {
    expect(
      lint('bench/archive-batch.bench.ts', "import { prng } from '../test/support/prng.ts';"),
    ).toEqual([
      "'../test/support/prng.ts' is not importable from bench/archive-batch.bench.ts: test/ is what jest runs: what the benches, the scripts and the tests share lives in support/.",
    ]);
    expect(
      lint('bench/lib/mailbox.ts', "import type { TestKey } from '../../test/fixtures/pkcs7.ts';"),
    ).toHaveLength(1);
    expect(
      lint('scripts/forgot-password-timing.ts', "import { startTestApp } from '../test/app.ts';"),
    ).toHaveLength(1);
    expect(
      lint('support/processes.ts', "import { sleep } from '../test/support/time.ts';"),
    ).toHaveLength(1);
    expect(lint('bench/lib/mailbox.ts', "import { prng } from '../../support/prng.ts';")).toEqual(
      [],
    );
    expect(
      lint(
        'test/integration/jobs/api.test.ts',
        "import { cms } from '../../../support/fixtures/cms.ts';",
      ),
    ).toEqual([]);
  });

  it('when a package rule names express, then express/sub-paths are covered but a package that only starts the same is not', () => {
    const services = LAYER_RULES.find((rule) => rule.files.includes('api/services/'));
    expect(brokenRule('api/services/x.ts', 'express/lib/router')).toBe(services);
    expect(brokenRule('api/services/x.ts', 'express-rate-limit')).toBeNull();
    expect(brokenRule('api/services/x.ts', 'api/services/y.ts')).toBeNull();
  });
});
