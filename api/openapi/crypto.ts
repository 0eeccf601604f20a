/**
 * The OpenAPI form of a runtime operation (its contract: api/http/runtime-contract.ts; its body
 * schema: api/services/crypto/bodies.ts): single and batch request, single and batch answer, an
 * example each, its problems.
 */
import type { TObject } from 'typebox';
import { plainSchema, problemResponse } from './components.ts';
import { COMMON, obj, type OperationDoc, type Schema } from '../http/runtime-contract.ts';
import { BatchOf } from '../services/crypto/bodies.ts';
const resultsOf = (item: Schema): Schema =>
  obj({
    results: {
      type: 'array',
      items: {
        oneOf: [
          { allOf: [item, obj({ status: { const: 200 } }, ['status'])] },
          obj({ status: { type: 'integer' }, error: { $ref: '#/components/schemas/Problem' } }),
        ],
      },
    },
  });
/**
 * One documented runtime operation: single and batch request, single and batch answer, an
 * example each, its problems. `common` replaces the problems every operation shares (the legacy
 * API answers a missing role with 401, not 403).
 */
export function operation(o: OperationDoc, request: TObject) {
  return {
    post: {
      tags: [o.tag ?? 'crypto'],
      operationId: o.id,
      summary: o.summary,
      ...(o.decrypts ? { 'x-keyward-decrypts': true } : {}),
      description: `Requires ${o.permission}. ${o.description} A batch \`{items}\` answers \`{results}\` in order.`,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { oneOf: [plainSchema(request), plainSchema(BatchOf(request))] },
            example: o.example,
          },
        },
      },
      responses: {
        200: {
          description: 'the result, or one result per item',
          content: {
            'application/json': {
              schema: { oneOf: [o.response, resultsOf(o.response)] },
              example: o.answer,
            },
          },
        },
        ...Object.fromEntries(
          Object.entries({ ...o.problems, ...(o.common ?? COMMON) }).map(([code, text]) => [
            code,
            problemResponse(text),
          ]),
        ),
      },
    },
  };
}
