/** The one rule for the display names of tenants, roles and workloads. */
import { problem } from '../../../shared/errors/index.ts';
import { unfitText } from '../../../shared/ids.ts';

/** A trimmed name of 1 to 200 characters without control characters; 400 naming `what` otherwise. */
export function requireName(name: string, what: string): string {
  if (name.trim() === '' || name.length > 200)
    throw problem('validation_failed', `${what} needs a name of 1 to 200 characters`);
  // The HTTP entry refuses these already; bootstrap and tests call the services directly.
  const unfit = unfitText(name);
  if (unfit) throw problem('validation_failed', `${what} name ${unfit}`);
  return name.trim();
}
