/**
 * The token-endpoint peer: panva's oidc-provider 9, imported by absolute path from the bench's
 * cache directory (it is no dependency of the project), configured as a fair peer:
 * client_credentials, resource indicators with one resource server whose access tokens are
 * ES256 JWTs, one ES256 key in jwks, the built-in in-memory adapter, clients that authenticate
 * by client_secret_post. Usage: node oidc-peer-server.ts <port> <install dir> <config.json>
 * (config: { issuer, resource, scope, clients: [{ clientId, clientSecret }] }).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface PeerConfig {
  issuer: string;
  resource: string;
  scope: string;
  clients: Array<{ clientId: string; clientSecret: string }>;
}

const [port, installDir, configFile] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, 'utf8')) as PeerConfig;
const entry = join(installDir, 'node_modules', 'oidc-provider', 'lib', 'index.js');
const { default: Provider } = await import(pathToFileURL(entry).href);

const signingKey = {
  ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }),
  kid: 'bench-es256',
  alg: 'ES256',
  use: 'sig',
};

const provider = new Provider(config.issuer, {
  clients: config.clients.map((c) => ({
    client_id: c.clientId,
    client_secret: c.clientSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
    // The client's default is RS256, for which this provider has no key (it issues no ID token).
    id_token_signed_response_alg: 'ES256',
  })),
  jwks: { keys: [signingKey] },
  // Keyward's workload tokens live 36000 s; the same here (and no notice about the default).
  ttl: { ClientCredentials: 36_000 },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // The token request names no resource (Keyward's form has none either): default to ours.
      defaultResource: () => config.resource,
      getResourceServerInfo: () => ({
        scope: config.scope,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
});

const server = createServer(provider.callback()).listen(Number(port), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
