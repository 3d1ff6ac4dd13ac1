import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
const db = await PGlite.create({ dataDir: '/tmp/pgl1' });
const srv = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 8 });
await srv.start();
console.log(srv.getServerConn?.(), Object.keys(srv));
