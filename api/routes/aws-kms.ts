/**
 * The AWS KMS API (docs/aws-kms.md) at POST /, as a protocol row (api/rows/protocol.ts): SigV4
 * instead of a bearer token, awsJson1_1 bodies, AWS-shaped errors, answered by one core
 * (api/http/aws-kms.ts) on the runtime lane and on Express alike. The AWS operation is the
 * `X-Amz-Target` header, whose values come from the operation table, so a new operation is
 * documented by being served.
 *
 * Tests: test/integration/aws-kms/bad-input.test.ts,
 *   test/integration/aws-kms/cross-instance.test.ts,
 *   test/integration/aws-kms/anonymous-until-signed.test.ts,
 *   test/integration/core/expensive-routes.test.ts, test/integration/aws-kms/key-lifecycle.test.ts,
 *   test/integration/core/expensive-work.test.ts,
 *   test/integration/vault-transit/flags-and-tenants.test.ts, and 1 more under test/unit/
 */
import { AMZ_JSON, awsAnswer } from '../http/aws-kms.ts';
import { protocolRow } from '../rows/protocol.ts';
import { AWS_OPERATIONS } from '../services/aws-kms/operations.ts';

/** An AWS error answer, with the exceptions docs/aws-kms.md names (`x-amzn-ErrorType` too). */
const awsError = (description: string, example: { __type: string; message: string }) => ({
  description,
  content: { [AMZ_JSON]: { schema: { $ref: '#/components/schemas/AwsError' }, example } },
});

/** POST / with X-Amz-Target. */
export const AWS_KMS_ROWS = [
  protocolRow({
    method: 'post',
    path: '/',
    protocol: 'aws-kms',
    errorMedia: AMZ_JSON,
    errorSchema: '#/components/schemas/AwsError',
    // The AWS API is called as often as /api/v3/crypto: on the hot path with it.
    lane: true,
    serve: (ctx, { req, id, noteClaims }) => awsAnswer(ctx, req, id, noteClaims),
    operation: {
      tags: ['aws-kms'],
      operationId: 'awsKms',
      summary: 'AWS KMS API: the operation named by X-Amz-Target (TrentService.<Operation>)',
      description:
        "Point an AWS client at the service: `--endpoint-url` on every CLI command, `endpoint` in an SDK client (not `AWS_ENDPOINT_URL_KMS` alone: CLIs before 2.13.0 and 1.29.0 ignore it and send the request, plaintext included, to AWS). Requests are signed with AWS Signature Version 4 (service `kms`) by a workload access key (`POST /api/v3/admin/tenants/{tenantId}/workloads/{workloadId}/access-keys`) and act as that workload: its permissions, rate budgets and audit, once the signature verifies (until then a refusal spends the failure budget of the access key at the sending address, as failed client authentication does at the token endpoint: 429 LimitExceededException past it). X-Amz-Target and Content-Type must be signed; session tokens (X-Amz-Security-Token) are refused. The body is the AWS operation's request in awsJson1_1 (blobs base64); the answer is its AWS response. See docs/aws-kms.md for the operations, their Keyward permissions and key states.",
      security: [{ awsSigV4: [] }],
      // Per X-Amz-Target: the operations that can trigger caller-costed work (their table's rows).
      'x-keyward-expensive': Object.fromEntries(
        [...AWS_OPERATIONS]
          .filter(([, o]) => o.expensive)
          .map(([name, o]) => [name, { kinds: o.expensive!.kinds, runsIn: 'api' }]),
      ),
      parameters: [
        {
          name: 'X-Amz-Target',
          in: 'header',
          required: true,
          schema: { enum: [...AWS_OPERATIONS.keys()].map((name) => `TrentService.${name}`) },
          example: 'TrentService.Encrypt',
        },
      ],
      requestBody: {
        required: true,
        content: {
          [AMZ_JSON]: {
            schema: {
              type: 'object',
              description: "the AWS operation's request members",
              additionalProperties: true,
            },
            example: {
              KeyId: 'alias/orders',
              Plaintext: 'aW52b2ljZSA0Mg==',
              EncryptionContext: { purpose: 'invoices' },
            },
          },
        },
      },
      responses: {
        200: {
          description: "the AWS operation's response",
          content: {
            [AMZ_JSON]: {
              schema: { type: 'object', additionalProperties: true },
              example: {
                KeyId: 'arn:aws:kms:eu-west-1:123456789012:key/orders-db',
                CiphertextBlob: 'S1dDAgBIZXlKaGJHY2lPaUprYVhJaUxD...',
                EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
              },
            },
          },
        },
        400: awsError(
          'an AWS exception: MissingAuthenticationTokenException, IncompleteSignatureException, InvalidSignatureException, UnrecognizedClientException, UnknownOperationException, SerializationException, ValidationException, NotFoundException, DisabledException, KMSInvalidStateException, InvalidCiphertextException, IncorrectKeyException, InvalidKeyUsageException, AccessDeniedException, LimitExceededException, KMSInvalidSignatureException, KMSInvalidMacException, UnsupportedOperationException, AlreadyExistsException, TagException',
          { __type: 'NotFoundException', message: "Key 'alias/none' does not exist" },
        ),
        429: awsError(
          'LimitExceededException: too many refusals before the signature verified, for this access key at this address (RATE_LIMIT_FAILURES_PER_MINUTE; Retry-After)',
          {
            __type: 'LimitExceededException',
            message: 'Too many failed authentications from this address; retry later.',
          },
        ),
        500: awsError('KMSInternalException', {
          __type: 'KMSInternalException',
          message: 'internal error',
        }),
      },
    },
  }),
];
