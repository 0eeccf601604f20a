/**
 * The legacy runtime operations of spec 4.2, POST /api/crypto/{encrypt,decrypt,sign,verify}:
 * the v3 operations behind legacy tokens and legacy role names (api/middleware/legacy-role.ts).
 */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { route } from '../../http/route.ts';
import { runtimeHandler } from '../../http/runtime-handler.ts';
import { legacyRole } from '../../middleware/legacy-role.ts';
import { jsonBody } from '../../middleware/body.ts';
import { decrypt, encrypt, sign, verify } from '../../services/crypto/runtime.ts';

/** Mounted at /api/crypto (after legacy-audience authentication). */
export function createLegacyCryptoRouter(ctx: AppContext): Router {
  const router = Router();
  const json = jsonBody(ctx.config.jsonLimitBytes);
  const ops = [
    ['encrypt', 'secure.encrypt', encrypt],
    ['decrypt', 'secure.decrypt', decrypt],
    ['sign', 'secure.sign', sign],
    ['verify', 'secure.verifySignature', verify],
  ] as const;
  for (const [name, role, op] of ops) {
    route(router, `/${name}`, {
      post: [legacyRole(ctx, role), ...json, runtimeHandler(ctx, `legacy.crypto.${name}`, op)],
    });
  }
  return router;
}
