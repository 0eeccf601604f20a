/** Shared OpenAPI components: security scheme and the problem schema. */
export const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

export const components = {
  securitySchemes: {
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (RFC 9068 at+jwt)' },
    clientSecretBasic: { type: 'http', scheme: 'basic', description: 'Token endpoint client authentication (client_secret_basic, RFC 6749 section 2.3.1): base64 of urlencode(client_id):urlencode(client_secret)' },
  },
  schemas: {
    Problem: {
      type: 'object',
      required: ['type', 'title', 'status'],
      properties: {
        type: { type: 'string', format: 'uri', examples: ['http://127.0.0.1:8080/problems/key-not-found'] },
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
