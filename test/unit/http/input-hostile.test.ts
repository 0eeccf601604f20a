/**
 * Hostile input against the route row's reader (api/rows/input.ts): the query
 * converter turns only plain decimal text into a number, odd query and body shapes are refused
 * as 400 (never thrown as something else), and a refusal bounds the attacker's text it repeats.
 */
import type { Request } from 'express';
import { Type } from 'typebox';
import { answerChecker, inputChecker } from '../../../api/rows/input.ts';
import { AppError } from '../../../shared/errors/index.ts';

const row = {
  query: Type.Object(
    {
      limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
      all: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  body: Type.Object({ name: Type.String({ maxLength: 10 }) }, { additionalProperties: false }),
  bodyOptional: false,
};
const check = inputChecker(row);
const req = (query: Record<string, unknown>, body: unknown = { name: 'a' }) =>
  ({ params: {}, query, body }) as unknown as Request;

/** The answer of the reader: the checked query, or the refusal's status and message. */
function outcome(query: Record<string, unknown>, body?: unknown): unknown {
  try {
    return check(req(query, body)).query;
  } catch (e) {
    if (e instanceof AppError) return { status: e.status, message: e.message };
    throw e;
  }
}

describe('query converter', () => {
  it('turns plain decimal text into a number', () => {
    expect(outcome({ limit: '10' })).toEqual({ limit: 10 });
    expect(outcome({ limit: '0' })).toEqual({ limit: 0 });
  });

  it.each([
    ' 1',
    '1 ',
    '\t1',
    '0x10',
    '0b1',
    '0o7',
    '1e2',
    '',
    '+1',
    '01',
    'Infinity',
    '1e400',
    '1.',
  ])('refuses %j as a number (400, never a surprise value)', (raw) => {
    expect(outcome({ limit: raw })).toMatchObject({ status: 400 });
  });

  it('turns -0 into 0, not -0', () => {
    expect(Object.is((outcome({ limit: '-0' }) as { limit: number }).limit, 0)).toBe(true);
  });

  it('refuses a repeated or nested parameter as 400', () => {
    expect(outcome({ limit: ['1', '2'] })).toMatchObject({ status: 400 });
    expect(outcome({ limit: { a: '1' } })).toMatchObject({ status: 400 });
    expect(outcome({ all: ['true', 'false'] })).toMatchObject({ status: 400 });
  });

  it('refuses prototype member names as unknown parameters', () => {
    const q = JSON.parse('{"__proto__": "1", "constructor": "x"}') as Record<string, unknown>;
    expect(outcome(q)).toMatchObject({ status: 400 });
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('body shapes', () => {
  it.each([[[]], [['a']], ['text'], [1], [null], [true]])('refuses body %j as 400', (body) => {
    expect(outcome({}, body)).toMatchObject({ status: 400 });
  });

  it('refuses a deep body as 400', () => {
    let deep: unknown = {};
    for (let i = 0; i < 5000; i++) deep = { name: deep };
    expect(outcome({}, deep)).toMatchObject({ status: 400 });
  });

  it('bounds the unknown member name it repeats', () => {
    const name = 'x'.repeat(100_000);
    const r = outcome({}, { name: 'a', [name]: 1 }) as { message: string };
    expect(r.message.length).toBeLessThan(200);
  });

  it('bounds the unknown query parameter name it repeats', () => {
    const r = outcome({ ['q'.repeat(100_000)]: '1' }) as { message: string };
    expect(r.message.length).toBeLessThan(200);
  });
});

describe('answer check', () => {
  it('names a mismatch in bounded text, whatever the answer holds', () => {
    const mismatch = answerChecker(
      Type.Object({ items: Type.Record(Type.String(), Type.Integer()) }),
      'log',
    )!;
    const out = mismatch({ items: { ['k'.repeat(100_000)]: 'not a number' } });
    expect(out).not.toBeNull();
    expect(out!.length).toBeLessThan(300);
  });
});
