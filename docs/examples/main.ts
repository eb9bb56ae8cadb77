import { bootstrap } from './quick-start';

// The entry point, as `nest new` lays it out: quick-start.ts only exports, so tests can import it without a server.
void bootstrap(Number(process.env.PORT ?? 3000), process.env.HOST);
