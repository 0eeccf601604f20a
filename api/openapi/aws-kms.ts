/**
 * OpenAPI entry of the AWS KMS API (contract 10, docs/aws-kms.md): one operation, `POST /`, whose
 * AWS operation is the `X-Amz-Target` header and whose body is awsJson1_1. The target list comes
 * from the operation table, so a new operation is documented by being served.
 */
import { AWS_OPERATIONS } from '../services/aws-kms/operations.ts';

/** The media type of the AWS protocol's requests and answers, errors included. */
export const AMZ_JSON_MEDIA = 'application/x-amz-json-1.1';

const TARGETS = [...AWS_OPERATIONS.keys()].map((name) => `TrentService.${name}`);

/** The AWS error shape, with the exceptions contract 10 names. */
const awsError = (description: string, example: { __type: string; message: string }) => ({
  description,
  content: {
    [AMZ_JSON_MEDIA]: { schema: { $ref: '#/components/schemas/AwsError' }, example },
  },
});

/** POST / with X-Amz-Target (the AWS KMS API). */
export const awsKmsOperation = {
  tags: ['aws-kms'],
  operationId: 'awsKms',
  summary: 'AWS KMS API: the operation named by X-Amz-Target (TrentService.<Operation>)',
  description:
    "Point an AWS client at the service (`--endpoint-url`, `AWS_ENDPOINT_URL_KMS`, `endpoint`). Requests are signed with AWS Signature Version 4 (service `kms`) by a workload access key (`POST /api/v3/admin/tenants/{tenantId}/workloads/{workloadId}/access-keys`) and act as that workload: its permissions, rate budgets and audit. The body is the AWS operation's request in awsJson1_1 (blobs base64); the answer is its AWS response. See docs/aws-kms.md for the operations, their Keyward permissions and key states.",
  security: [{ awsSigV4: [] }],
  parameters: [
    {
      name: 'X-Amz-Target',
      in: 'header',
      required: true,
      schema: { enum: TARGETS },
      example: 'TrentService.Encrypt',
    },
  ],
  requestBody: {
    required: true,
    content: {
      [AMZ_JSON_MEDIA]: {
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
        [AMZ_JSON_MEDIA]: {
          schema: { type: 'object', additionalProperties: true },
          example: {
            KeyId: 'arn:aws:kms:eu-west-1:123456789012:key/orders-db',
            CiphertextBlob: 'S1dDAWV5SmhiR2NpT2lKa2FYSWl...',
            EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
          },
        },
      },
    },
    400: awsError(
      'an AWS exception: MissingAuthenticationTokenException, IncompleteSignatureException, InvalidSignatureException, UnrecognizedClientException, UnknownOperationException, SerializationException, ValidationException, NotFoundException, DisabledException, KMSInvalidStateException, InvalidCiphertextException, IncorrectKeyException, InvalidKeyUsageException, AccessDeniedException, LimitExceededException, KMSInvalidSignatureException, KMSInvalidMacException, UnsupportedOperationException, AlreadyExistsException',
      { __type: 'NotFoundException', message: "Key 'alias/none' does not exist" },
    ),
    500: awsError('KMSInternalException', {
      __type: 'KMSInternalException',
      message: 'internal error',
    }),
  },
};
