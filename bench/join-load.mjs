// Bounded HTTPS load from inside a bed host: `node join-load.mjs URL METHOD BODY|- CONCURRENCY REQUESTS MAX_SECONDS`.
// Prints one JSON line {requests, ok, errors, seconds, rps, okRps, statuses, p50Ms, p99Ms}; `ok` counts 200s.
// Stops at REQUESTS or MAX_SECONDS.
import { request, Agent } from 'node:https';
const [url, method, body, conc, total, maxSeconds] = process.argv.slice(2);
const agent = new Agent({ keepAlive: true, maxSockets: Number(conc), rejectUnauthorized: false });
const deadline = Date.now() + Number(maxSeconds) * 1000;
let sent = 0, errors = 0;
const statuses = {};
const lat = [];
function one() {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = request(url, { method, agent, headers: body !== '-' ? { 'content-type': 'application/json' } : {} }, (res) => {
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      res.resume();
      res.on('end', () => { lat.push(performance.now() - t0); resolve(); });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end(body !== '-' ? body : undefined);
  });
}
async function worker() { while (sent < Number(total) && Date.now() < deadline) { sent++; await one(); } }
const start = performance.now();
await Promise.all(Array.from({ length: Number(conc) }, worker));
const seconds = (performance.now() - start) / 1000;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1) : null);
const ok = statuses[200] ?? 0;
console.log(JSON.stringify({ requests: lat.length, ok, errors, seconds: Number(seconds.toFixed(2)), rps: Number((lat.length / seconds).toFixed(1)), okRps: Number((ok / seconds).toFixed(1)), statuses, p50Ms: q(0.5), p99Ms: q(0.99) }));
agent.destroy();
