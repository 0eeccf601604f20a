import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  AppError,
  PROBLEMS,
  PROBLEM_AREAS,
  decryptionFailed,
  problem,
  type ProblemCode,
} from '../../../shared/errors/index.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** Every .ts file under the folders of the running code. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) out.push(p);
    }
  };
  for (const dir of ['api', 'shared', 'workers']) walk(join(ROOT, dir));
  return out;
}

describe('the problem catalogue', () => {
  it('when the areas are joined, then each code belongs to exactly one area and the union is the whole table', () => {
    const codes = Object.values(PROBLEM_AREAS).flatMap((area) => Object.keys(area));
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes.sort()).toEqual(Object.keys(PROBLEMS).sort());
  });

  it('when the rows are read, then every code is snake_case with a 4xx/5xx status, a kebab-case slug of its own and a title', () => {
    const slugs = new Set<string>();
    for (const [code, spec] of Object.entries(PROBLEMS)) {
      expect({ code, ok: /^[a-z][a-z0-9_]*$/.test(code) }).toEqual({ code, ok: true });
      expect({ code, status: spec.status >= 400 && spec.status < 600 }).toEqual({
        code,
        status: true,
      });
      expect({
        code,
        slug: /^[a-z][a-z0-9-]*$/.test(spec.slug),
        title: spec.title.length > 0,
      }).toEqual({ code, slug: true, title: true });
      expect(slugs.has(spec.slug)).toBe(false);
      slugs.add(spec.slug);
    }
  });

  it('when a decryption fails anywhere (runtime JWE, CMS engine, JOSE streams), then it is the one decryption-failed, 400 (the CMS engine answered 422 cms-decryption-failed)', () => {
    expect(PROBLEMS.decryption_failed).toMatchObject({
      status: 400,
      slug: 'decryption-failed',
      title: 'Decryption Failed',
    });
    expect(Object.keys(PROBLEMS).filter((code) => code.includes('decryption'))).toEqual([
      'decryption_failed',
    ]);
    expect(decryptionFailed(new Error('bad tag'))).toMatchObject({
      code: 'decryption_failed',
      status: 400,
      message: 'the content could not be decrypted',
    });
  });

  it('when a keystore holds no private key, then its title is the keystore table\'s (the import service said "Empty Keystore")', () => {
    expect(problem('keystore_empty', 'x').title).toBe('Keystore Holds No Private Key');
  });

  it('when an error is built, then its status, slug and title come from its code alone', () => {
    const err = problem('key_not_found', 'no key k1', {
      details: { kid: 'k1' },
      headers: { 'X-A': 'b' },
      cause: new Error('db'),
    });
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({
      code: 'key_not_found',
      status: 404,
      slug: 'key-not-found',
      title: 'Key Not Found',
      details: { kid: 'k1' },
      headers: { 'X-A': 'b' },
      expose: true,
    });
    expect(problem('storage_unavailable', 'down').expose).toBe(false);
  });

  it('when code outside the catalogue, or a status, slug or title of its own, is given, then it does not type-check', () => {
    const build = (code: ProblemCode) => problem(code, 'x');
    // @ts-expect-error: not a catalogued code
    expect(() => build('made_up_code')).toThrow(TypeError);
    // @ts-expect-error: no status override
    expect(problem('conflict', 'x', { status: 418 }).status).toBe(409);
    // @ts-expect-error: no slug override
    expect(new AppError('conflict', 'x', { slug: 'other' }).slug).toBe('conflict');
  });

  it('when the source tree is scanned, then no file but the catalogue holds a table of status, slug and title', () => {
    const tables = sources()
      .filter(
        (file) =>
          !file.endsWith(join('shared', 'errors', 'catalogue.ts')) &&
          !file.includes(`${join('api', 'openapi')}`),
      )
      .filter((file) => /status:\s*\d{3},\s*slug:\s*'/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(ROOT, file));
    expect(tables).toEqual([]);
  });
});
