// `node --import <this> …`: appends the URL of every module the process loads (ESM and CommonJS,
// through Node's module hooks) to the file named by $KUBECEPTION_TRACE_LOADS. For start-up tests.
import { register } from 'node:module';

register(`data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
const out = process.env.KUBECEPTION_TRACE_LOADS;
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (out) appendFileSync(out, r.url + '\\n');
  return r;
}`)}`);
