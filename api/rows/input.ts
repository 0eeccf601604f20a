/**
 * The one reader of a row's input (api/rows/endpoint.ts): path parameters, query and JSON body
 * checked against the row's schemas by validators compiled once at startup (TypeBox's compiler:
 * generated code, no schema walk per request). A refusal names the field: 400 validation-failed
 * for the query and the body (an unknown member named as such), 404 for a path
 * parameter that does not fit, since it names no record.
 */
import type { Request } from 'express';
import type { TObject, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { problem, type AppError } from '../../shared/errors/index.ts';
import { refusalText } from '../../shared/validation/refusal.ts';

/** The part of a row the reader needs. */
interface InputSchemas {
  params?: TObject;
  notFound?: string;
  query?: TObject;
  body?: TSchema;
  bodyOptional?: boolean;
}

/** The checked input of one request. */
export interface CheckedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

export type InputChecker = (req: Request) => CheckedInput;

interface SchemaError {
  keyword: string;
  instancePath: string;
  params: { additionalProperties?: string[]; requiredProperties?: string[]; limit?: number };
  message: string;
}

type Validator = { Check(value: unknown): boolean; Errors(value: unknown): Iterable<unknown> };

const field = (path: string) => path.slice(1).replaceAll('/', '.').slice(0, 80);
/** The member a path is in: an array's item is named by its array (`usages` for `/usages/1`). */
const member = (path: string) => field(path.replace(/\/\d+(?=\/|$)/g, ''));

/**
 * The outermost member on an error's path (a missing member's included) whose schema gives its
 * refusal text (shared/validation/refusal.ts), with that text; undefined when none does.
 */
function textAt(root: TSchema, e: SchemaError): { at: string; text: string } | undefined {
  const names = e.instancePath.split('/').slice(1);
  if (e.keyword === 'required') names.push((e.params.requiredProperties ?? [''])[0]);
  let schema: unknown = root;
  for (let i = 0; i < names.length && schema && typeof schema === 'object'; i++) {
    const s = schema as { properties?: Record<string, unknown>; items?: unknown };
    schema = /^\d+$/.test(names[i]) && s.items ? s.items : s.properties?.[names[i]];
    const text = refusalText(schema);
    if (text)
      return {
        at: names
          .slice(0, i + 1)
          .join('.')
          .slice(0, 80),
        text,
      };
  }
  return undefined;
}

/**
 * The problem for the first error of a refused value: an unknown member first (the one a
 * client most needs to hear of), then a member whose schema words its own refusal, then a
 * missing one, then too few members, then the first other.
 */
function refusal(where: 'query' | 'body', errors: SchemaError[], root?: TSchema): AppError {
  // A member with several forms (a union) is named as a whole: its branches' errors mislead.
  const forms = errors.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  if (forms) {
    const at = field(forms.instancePath) || where;
    return problem('validation_failed', `${at} fits none of its documented forms`, {
      details: { field: at },
    });
  }
  const unknown = errors.find(
    (e) => e.keyword === 'additionalProperties' && !(root && textAt(root, e)),
  );
  if (unknown) {
    const name = (unknown.params.additionalProperties ?? [''])[0].slice(0, 40);
    const at = field(unknown.instancePath);
    const full = at ? `${at}.${name}` : name;
    const what = where === 'query' ? 'query parameter' : 'member';
    return problem('validation_failed', `unknown ${what} ${full}`, { details: { field: full } });
  }
  const worded = root && errors.map((e) => textAt(root, e)).find(Boolean);
  if (worded)
    return problem('validation_failed', `${worded.at} ${worded.text}`, {
      details: { field: worded.at },
    });
  const missing = errors.find((e) => e.keyword === 'required');
  if (missing) {
    const name = (missing.params.requiredProperties ?? [''])[0];
    const at = field(missing.instancePath);
    const full = at ? `${at}.${name}` : name;
    return problem('validation_failed', `${full} is required`, { details: { field: full } });
  }
  const empty = errors.find((e) => e.keyword === 'minProperties');
  if (empty) {
    const at = field(empty.instancePath) || where;
    const n = empty.params.limit ?? 1;
    const what = n === 1 ? 'one member' : `${n} members`;
    return problem('validation_failed', `${at} needs at least ${what}`, { details: { field: at } });
  }
  const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0];
  const at = field(first?.instancePath ?? '') || where;
  return problem('validation_failed', `${at} ${first?.message ?? 'is not valid'}`, {
    details: { field: member(first?.instancePath ?? '') || where },
  });
}

/**
 * Plain decimal text, the one form a query number takes: `Number()` alone also reads ' 1', '0x10',
 * '0b1', '1e2' and '+1', so a value the client never wrote as that number would pass the check.
 */
const DECIMAL = /^-?(?:0|[1-9][0-9]{0,30})(?:\.[0-9]{1,30})?$/;

/** Query strings are text: members whose schema is a number, integer or boolean are converted first. */
function queryConverter(schema: TObject): (query: Record<string, unknown>) => object {
  const typed = Object.entries(schema.properties as Record<string, { type?: unknown }>).filter(
    ([, s]) => s.type === 'integer' || s.type === 'number' || s.type === 'boolean',
  );
  if (typed.length === 0) return (query) => query;
  return (query) => {
    const out: Record<string, unknown> = { ...query };
    for (const [name, s] of typed) {
      const raw = out[name];
      if (typeof raw !== 'string') continue;
      if (s.type === 'boolean') out[name] = raw === 'true' ? true : raw === 'false' ? false : raw;
      // `+ 0` makes '-0' the 0 a client means (a -0 would print as 0 yet differ under Object.is).
      else if (DECIMAL.test(raw)) out[name] = Number(raw) + 0;
    }
    return out;
  };
}

/** Path parameters as text: a wildcard's (`/*path`), which Express gives as its segments, joined by `/`. */
const pathParams = (params: Record<string, unknown>) =>
  Object.values(params).some(Array.isArray)
    ? Object.fromEntries(
        Object.entries(params).map(([k, v]) => [k, Array.isArray(v) ? v.join('/') : v]),
      )
    : params;

const compile = (schema: TSchema): Validator => Compile(schema) as unknown as Validator;
const errorsOf = (v: Validator, value: unknown) => [...v.Errors(value)] as SchemaError[];

/**
 * The check of a row's JSON answer against its documented schema (ANSWER_CHECK): null when
 * off or the answer has no schema; else a function naming the first mismatching field, or null.
 */
export function answerChecker(
  schema: TSchema | undefined,
  mode: string,
): ((answer: unknown) => string | null) | null {
  if (!schema || mode === 'off') return null;
  const v = compile(schema);
  return (answer) => {
    if (v.Check(answer)) return null;
    const first = errorsOf(v, answer).find((e) => e.keyword !== 'boolean');
    return `${field(first?.instancePath ?? '') || 'answer'} ${first?.message ?? 'does not fit'}`;
  };
}

/**
 * The check of a JSON body against `schema`, compiled now: the parsed value is checked in place
 * (no copy, no error list when it fits), else the 400 naming the field, as a row's body is refused.
 */
export function bodyChecker(schema: TSchema): (value: unknown) => void {
  const v = compile(schema);
  return (value) => {
    if (!v.Check(value)) throw refusal('body', errorsOf(v, value), schema);
  };
}

/** The reader of a row's input, its validators compiled now. */
export function inputChecker(row: InputSchemas): InputChecker {
  const params = row.params ? compile(row.params) : null;
  const query = row.query ? compile(row.query) : null;
  const convert = row.query ? queryConverter(row.query) : null;
  const body = row.body ? compile(row.body) : null;
  return (req) => {
    const p = pathParams(req.params);
    if (params && !params.Check(p)) throw problem('not_found', row.notFound ?? 'no such record');
    let q: unknown = {};
    if (query && convert) {
      q = convert(req.query as Record<string, unknown>);
      if (!query.Check(q)) throw refusal('query', errorsOf(query, q));
    }
    let b: unknown = req.body;
    if (body) {
      if (b === undefined && row.bodyOptional) b = {};
      if (!body.Check(b)) throw refusal('body', errorsOf(body, b ?? {}), row.body);
    }
    return { params: p, query: q, body: b };
  };
}
