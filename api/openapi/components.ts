/** Shared OpenAPI components: security schemes, the problem schema and the builders every area uses. */
export type Schema = Record<string, unknown>;

/** A TypeBox schema as the document shows it: a plain JSON object, without TypeBox's own symbols. */
export const plainSchema = (schema: object): Schema => JSON.parse(JSON.stringify(schema)) as Schema;

/** One problem+json response (RFC 7807) whose description lists the slugs it may carry. */
export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

/**
 * One OAuth error response (RFC 6749 5.2, `{error, error_description}`): the description lists
 * the `error` codes it may carry, which the schema enumerates, and the headers it sets.
 */
export const oauthErrorResponse = (
  description: string,
  errors: readonly string[] = [],
  headers?: Readonly<Record<string, string>>,
) => ({
  description: errors.length ? `${description} (error: ${errors.join(', ')})` : description,
  ...(headers
    ? {
        headers: Object.fromEntries(
          Object.entries(headers).map(([name, text]) => [
            name,
            { description: text, schema: { type: 'string' } },
          ]),
        ),
      }
    : {}),
  content: {
    'application/json': {
      schema: errors.length
        ? {
            allOf: [
              { $ref: '#/components/schemas/OAuthError' },
              { properties: { error: { enum: [...errors] } } },
            ],
          }
        : { $ref: '#/components/schemas/OAuthError' },
    },
  },
});

export const components = {
  securitySchemes: {
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (RFC 9068 at+jwt)' },
    clientSecretBasic: {
      type: 'http',
      scheme: 'basic',
      description:
        'Client authentication at the token and introspection endpoints (client_secret_basic, RFC 6749 section 2.3.1): base64 of urlencode(client_id):urlencode(client_secret)',
    },
    awsSigV4: {
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
      description:
        'AWS Signature Version 4 (AWS4-HMAC-SHA256, service `kms`) with a workload access key; X-Amz-Date within 5 minutes. Only for the AWS KMS API (POST /).',
    },
    vaultToken: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Vault-Token',
      description:
        'A Keyward access token (service-core), as POST /v1/auth/approle/login answers it; `Authorization: Bearer` is taken too. Only for the Vault Transit API (/v1/).',
    },
  },
  schemas: {
    // The Vault Transit API's answers and errors.
    VaultResponse: {
      type: 'object',
      properties: {
        request_id: { type: 'string' },
        data: { type: ['object', 'null'], additionalProperties: true },
        auth: { type: ['object', 'null'], additionalProperties: true },
      },
      additionalProperties: true,
    },
    VaultError: {
      type: 'object',
      required: ['errors'],
      properties: { errors: { type: 'array', items: { type: 'string' } } },
    },
    // The AWS KMS API's errors (awsJson1_1); the exception name is also `x-amzn-ErrorType`.
    AwsError: {
      type: 'object',
      required: ['__type', 'message'],
      properties: {
        __type: {
          type: 'string',
          description: 'the AWS exception name',
          examples: ['NotFoundException'],
        },
        message: { type: 'string' },
      },
    },
    Problem: {
      type: 'object',
      required: ['type', 'title', 'status'],
      properties: {
        type: {
          type: 'string',
          format: 'uri',
          examples: ['http://127.0.0.1:8080/problems/key-not-found'],
        },
        title: { type: 'string' },
        status: { type: 'integer' },
        detail: { type: 'string' },
        instance: { type: 'string' },
      },
    },
    OAuthError: {
      type: 'object',
      required: ['error'],
      properties: { error: { type: 'string' }, error_description: { type: 'string' } },
    },
  },
};
