/**
 * CLI over bed.ts for shell scripts and by hand (as root):
 *
 *   npx tsx test/bed/host.ts up NAME [--ip 10.250.0.X] [--hostname H] [--kubelet [--cni bed|none] [--kubeception-image]] [--flavour kubic]
 *   npx tsx test/bed/host.ts exec NAME [--cwd DIR] -- cmd args…     (exit code = the command's)
 *   npx tsx test/bed/host.ts stop NAME | power-cut NAME | start NAME | down NAME | down-all | list
 */
import { bootHost, destroyAllHosts, getHost, listHosts } from './bed.ts';

const USAGE = `usage: host.ts up NAME [--ip 10.250.0.X] [--hostname H] [--kubelet [--cni bed|none] [--kubeception-image]] [--flavour kubic]
       host.ts exec NAME [--cwd DIR] -- cmd args…
       host.ts stop NAME | power-cut NAME | start NAME | down NAME | down-all | list`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined) throw new Error(`${name} needs a value`);
  args.splice(i, 2);
  return v;
}

function mustGet(name: string | undefined) {
  const host = name ? getHost(name) : undefined;
  if (!host) throw new Error(`no such host: ${name ?? '(none)'}`);
  return host;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'up': {
      const ip = flag(rest, '--ip');
      const hostname = flag(rest, '--hostname');
      const cni = flag(rest, '--cni');
      if (cni !== undefined && cni !== 'bed' && cni !== 'none') throw new Error(`--cni must be bed or none\n${USAGE}`);
      const flavour = flag(rest, '--flavour');
      if (flavour !== undefined && flavour !== 'debian' && flavour !== 'kubic') throw new Error(`--flavour must be debian or kubic\n${USAGE}`);
      const kubelet = rest.includes('--kubelet') || flavour === 'kubic';
      const name = rest.find((a) => !a.startsWith('--'));
      if (!name) throw new Error(USAGE);
      const t0 = Date.now();
      const host = await bootHost({ name, ip, hostname, kubelet: kubelet && { cni }, flavour });
      // The join service's image (what `run bootstrap` deploys last), built from this checkout.
      if (kubelet && rest.includes('--kubeception-image')) await (await import('./kubeception-image.ts')).importKubeceptionImage(host);
      console.log(`${host.name} ${host.ip} pid=${host.pid} booted in ${Date.now() - t0} ms`);
      if (host.failedUnits.length) console.log(`failed units: ${host.failedUnits.join(' ')}`);
      return 0;
    }
    case 'exec': {
      const dd = rest.indexOf('--');
      if (dd < 0 || dd === rest.length - 1) throw new Error(USAGE);
      const head = rest.slice(0, dd);
      const cwd = flag(head, '--cwd');
      const r = await mustGet(head[0]).exec(rest.slice(dd + 1), { cwd, input: process.stdin.isTTY ? undefined : await stdin() });
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      return r.code;
    }
    case 'stop':
      await mustGet(rest[0]).stop();
      return 0;
    case 'power-cut':
      await mustGet(rest[0]).powerCut();
      return 0;
    case 'start':
      await mustGet(rest[0]).start();
      return 0;
    case 'down':
      await mustGet(rest[0]).destroy();
      return 0;
    case 'down-all':
      await destroyAllHosts();
      return 0;
    case 'list':
      for (const h of listHosts()) console.log(`${h.name}\t${h.ip}\t${h.hostname}\t${h.running ? 'running' : 'stopped'}`);
      return 0;
    default:
      console.error(USAGE);
      return 2;
  }
}

async function stdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e.message);
    process.exit(1);
  },
);
