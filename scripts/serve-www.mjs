// A static file server for www/ (node:http, no dependencies): `npm run demo`, and
// the browser test, which imports `serveWww` and listens on an ephemeral port. The
// types are those the worker's assets name (selfhost/assets.js).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { typeOf } from '../selfhost/assets.js';

const WWW = fileURLToPath(new URL('../www/', import.meta.url));

/** A server (not yet listening) for the files below `root`. GET and HEAD only. */
export function serveWww(root = WWW) {
  return http.createServer(wwwHandler(root));
}

/** The request handler of `serveWww`, for servers that route other paths elsewhere. */
export function wwwHandler(root = WWW) {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (rel.endsWith('/')) rel += 'index.html';
    const file = path.join(root, rel);
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, (err, data) => {
      if (err) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
        return;
      }
      res.writeHead(200, {
        'content-type': typeOf(file) ?? 'application/octet-stream',
        'cache-control': 'no-cache',
      });
      res.end(req.method === 'HEAD' ? undefined : data);
    });
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const port = Number(process.env.PORT ?? 8080);
  const host = process.env.HOST ?? '127.0.0.1';
  serveWww().listen(port, host, () => console.log(`demo: http://${host}:${port}/ (Ctrl-C to stop)`));
}
