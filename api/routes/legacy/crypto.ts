/**
 * The legacy runtime operations of spec 4.2, POST /api/crypto/{encrypt,decrypt,sign,verify}:
 * the v3 operations on the same per-route core (api/http/runtime-route.ts), behind legacy tokens
 * and legacy role names (api/middleware/legacy-role.ts).
 */
import { Router } from 'express';
import type { AppContext } from '../../context.ts';
import { addRuntimeRoutes, type LegacyRuntimeRoute } from '../../http/runtime-route.ts';
import { decrypt, encrypt, sign, verify } from '../../services/crypto/runtime.ts';

const LEGACY_OPERATIONS: readonly LegacyRuntimeRoute[] = [
  { path: '/encrypt', legacyRole: 'secure.encrypt', action: 'legacy.crypto.encrypt', op: encrypt },
  { path: '/decrypt', legacyRole: 'secure.decrypt', action: 'legacy.crypto.decrypt', op: decrypt },
  { path: '/sign', legacyRole: 'secure.sign', action: 'legacy.crypto.sign', op: sign },
  {
    path: '/verify',
    legacyRole: 'secure.verifySignature',
    action: 'legacy.crypto.verify',
    op: verify,
  },
];

/** Mounted at /api/crypto (after legacy-audience authentication). */
export function createLegacyCryptoRouter(ctx: AppContext): Router {
  return addRuntimeRoutes(ctx, Router(), LEGACY_OPERATIONS);
}
