// A join-service impostor for the e2e: HTTPS on 127.0.0.1:PORT that appends every request (method,
// URL, headers, body) as one JSON line to LOG and answers GET /cluster-info… with the JSON in ANSWER.
// Usage: node recorder.mjs PORT CERT KEY ANSWER LOG
import { createServer } from 'node:https';
import { appendFileSync, readFileSync } from 'node:fs';

const [port, cert, key, answer, log] = process.argv.slice(2);
createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    appendFileSync(log, `${JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body })}\n`);
    if (req.url.startsWith('/cluster-info')) res.writeHead(200, { 'content-type': 'application/json' }).end(readFileSync(answer));
    else res.writeHead(404).end('{}');
  });
}).listen(Number(port), '127.0.0.1', () => console.log('listening'));
