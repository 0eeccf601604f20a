/** The few members of `pg` (no @types/pg here) that the embedded database's test uses directly. */
declare module 'pg' {
  import type { Socket } from 'node:net';
  interface ClientConfig {
    host: string;
    port: number;
    user: string;
  }
  export class Client {
    constructor(config: ClientConfig);
    connection: { stream: Socket };
    connect(): Promise<void>;
    query(text: string): Promise<{ rows: Record<string, unknown>[] }>;
    end(): Promise<void>;
    on(event: 'error', listener: (err: Error) => void): this;
  }
  const pg: { Client: typeof Client };
  export default pg;
}
