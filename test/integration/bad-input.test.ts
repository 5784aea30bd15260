/**
 * Bad input on a real host: every case exits 2 with a message naming the field or file, saying why
 * and how to fix it — and the host's file tree is unchanged (found before the first host write).
 * Config fields, CLI flags, host state (found by preflight) and join flags; the count is printed
 * (before the hosts boot), and each case is a test of its own.
 * The host has a kubelet and containerd (so the image, kubelet-version and cgroup-driver checks
 * meet real components).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { assertSameTree, E2E_PREFIX, kc, snapshot, SITE, writeConfig } from '../helpers/bed-cli.ts';

/**
 * One bad input. `task` default `bootstrap`; `setup`/`cleanup` are bash run in the host around the
 * case; `env` the CLI's environment (a join's default: the token in KUBECEPTION_TOKEN, as printed).
 */
type Case = { name: string; config?: unknown; raw?: string; args?: string[]; env?: Record<string, string>; task?: 'bootstrap' | 'join'; command?: string[]; setup?: string; cleanup?: string; want: RegExp[] };

const HASH = `sha256:${'a'.repeat(64)}`;
const TOKEN_ENV = { KUBECEPTION_TOKEN: 'abcdef.0123456789abcdef' };
const JOIN = ['--url', 'https://10.250.0.9:30000', '--ca-cert-hash', HASH];
const withFlag = (name: string, value: string) => JOIN.map((a, i) => (JOIN[i - 1] === name ? value : a));
const FLAG_WARNING = /warning: --token puts the token on the command line/;

const cases: Case[] = [
  { name: 'nodeName with an underscore', config: { nodeName: 'node_a' }, want: [/nodeName/, /DNS-1123/, /fix: set nodeName to .*"node-a"/] },
  { name: 'pod and service subnets overlap', config: { networking: { podSubnet: '10.0.0.0/8', serviceSubnet: '10.96.0.0/12' } }, want: [/networking\.podSubnet, networking\.serviceSubnet/, /10\.0\.0\.0\/8 and serviceSubnet 10\.96\.0\.0\/12 overlap/] },
  { name: 'pod subnet overlaps the host network', config: { networking: { podSubnet: '10.250.0.0/16' } }, want: [/networking\.podSubnet/, /host network 10\.250\./] },
  { name: 'service subnet has host bits set', config: { networking: { serviceSubnet: '10.96.0.1/12' } }, want: [/serviceSubnet/, /host bits/] },
  { name: 'advertise address not on this host', config: { localAPIEndpoint: { advertiseAddress: '10.250.77.77' } }, want: [/localAPIEndpoint\.advertiseAddress/, /not assigned/] },
  { name: 'advertise address is a name', config: { localAPIEndpoint: { advertiseAddress: 'master.example' } }, want: [/advertiseAddress/, /not an IP/] },
  { name: 'bindPort of the wrong type', config: { localAPIEndpoint: { bindPort: '6443' } }, want: [/localAPIEndpoint\.bindPort/, /expected number/] },
  { name: 'bootstrap and final apiserver on one port', config: { bootstrapAPIEndpoint: { bindPort: 6443 } }, want: [/bootstrapAPIEndpoint\.bindPort/, /coexist/] },
  { name: 'unknown config key', config: { networking: { podCIDR: '10.244.0.0/16' } }, want: [/networking/, /podCIDR/] },
  { name: 'unknown distro', config: { distro: 'gentoo' }, want: [/distro "gentoo"/, /known: debian, kubic/] },
  { name: 'key algorithm kubeadm does not offer', config: { encryptionAlgorithm: 'ECDSA-P521' }, want: [/encryptionAlgorithm/, /ECDSA-P256/] },
  { name: 'extra SAN that is no name', config: { apiServer: { extraSANs: ['api server'] } }, want: [/apiServer\.extraSANs\[0\]/] },
  { name: 'config file missing', config: {}, args: ['--config', '/root/nope.ts'], want: [/--config \/root\/nope\.ts/, /does not exist/] },
  { name: 'config with a syntax error', raw: 'export default { distro: "debian", ', want: [/config-load/, /kubeception\.config\.ts/] },
  { name: 'config without a default export', raw: 'export const config = {};\n', want: [/no default export/] },
  { name: 'unknown step in --skip', config: {}, args: ['--skip', 'etcdd'], want: [/no step "etcdd"/] },
  { name: 'unknown flag', config: {}, args: ['--nodename', 'x'], want: [/unknown flag --nodename/] },
  { name: 'empty --only (e.g. an unset variable)', config: {}, args: ['--only', ''], want: [/--only needs a comma-separated list/] },
  { name: 'certificatesDir is /', config: { certificatesDir: '/' }, want: [/certificatesDir/, /system directory/] },
  { name: 'bindPort taken by etcd', config: { localAPIEndpoint: { bindPort: 2379 } }, want: [/localAPIEndpoint\.bindPort/, /used by etcd/] },
  { name: 'foreign etcd environment file', config: {}, setup: 'printf "ETCD_NAME=other\\n" > /etc/default/etcd', want: [/FileAvailable--etc-default-etcd/, /ETCD_NAME/] },
  { name: 'CA certificate without its key', config: {}, setup: 'mkdir -p /etc/kubernetes/pki && openssl req -x509 -newkey rsa:2048 -nodes -keyout /root/orphan.key -out /etc/kubernetes/pki/ca.crt -days 1 -subj /CN=kubernetes 2>/dev/null', want: [/\[Certificates\]/, /ca\.key is missing/, /never replaces a CA/] },
  // config, more fields
  { name: 'kubernetesVersion not a version', config: { kubernetesVersion: 'latest' }, want: [/kubernetesVersion/, /not a version like v1\.\d+\.\d+/] },
  { name: 'dnsDomain with an underscore', config: { networking: { dnsDomain: 'cluster_local' } }, want: [/networking\.dnsDomain/, /DNS-1123/] },
  { name: 'podSubnet not a CIDR', config: { networking: { podSubnet: 'ten-dot-244' } }, want: [/networking\.podSubnet/] },
  { name: 'IPv6 podSubnet with an IPv4 advertise address', config: { networking: { podSubnet: 'fd00:244::/48' } }, want: [/networking\.podSubnet/, /IPv6/] },
  { name: 'bindPort out of range', config: { localAPIEndpoint: { bindPort: 70000 } }, want: [/localAPIEndpoint\.bindPort/] },
  { name: 'imageRepository with a space', config: { imageRepository: 'registry k8s io' }, want: [/imageRepository/, /not an image repository/] },
  { name: 'joinService.image without a tag', config: { joinService: { image: 'kubeception' } }, want: [/joinService\.image/, /tag or digest/] },
  { name: 'controlPlaneEndpoint with a scheme', config: { controlPlaneEndpoint: 'https://cp.example:6443' }, want: [/controlPlaneEndpoint/, /host\[:port\]/] },
  { name: 'kubelet.extraConfig sets a field kubeception owns', config: { kubelet: { extraConfig: { cgroupDriver: 'cgroupfs' } } }, want: [/kubelet\.extraConfig\.cgroupDriver/, /kubelet\.cgroupDriver instead/] },
  { name: 'extraArgs flag written with dashes', config: { apiServer: { extraArgs: { '--v': '5' } } }, want: [/apiServer\.extraArgs\["--v"\]/, /not a flag name/] },
  { name: 'kubelet.cgroupDriver not a driver', config: { kubelet: { cgroupDriver: 'none' } }, want: [/kubelet\.cgroupDriver/] },
  { name: 'etcd.dataDir relative', config: { etcd: { dataDir: 'var/lib/etcd' } }, want: [/etcd\.dataDir/] },
  { name: 'ignorePreflightErrors not a list', config: { ignorePreflightErrors: 'all' }, want: [/ignorePreflightErrors/] },
  // values that passed validation before issue 24 (F9)
  { name: 'controlPlaneEndpoint port out of range', config: { controlPlaneEndpoint: 'cp.example.com:99999' }, want: [/controlPlaneEndpoint/, /port 99999 is not a TCP port/] },
  { name: 'CA validity beyond 100 years', config: { caCertificateValidityPeriod: '99999999999999999h' }, want: [/caCertificateValidityPeriod/, /at most 876000h/] },
  { name: 'leaf validity longer than the CAs\'', config: { certificateValidityPeriod: '175200h' }, want: [/certificateValidityPeriod/, /longer than the CAs'/] },
  { name: 'renewal window not shorter than the validity', config: { certificateValidityPeriod: '1h', certificateRenewalWindow: '2160h' }, want: [/certificateRenewalWindow/, /every run would re-issue every leaf/] },
  { name: 'kubelet.extraConfig re-enabling the read-only port', config: { kubelet: { extraConfig: { readOnlyPort: 10255 } } }, want: [/kubelet\.extraConfig\.readOnlyPort/, /unauthenticated/] },
  { name: 'kubelet.extraConfig value of the wrong type', config: { kubelet: { extraConfig: { maxPods: 'many' } } }, want: [/kubelet\.extraConfig\.maxPods/, /expected number/] },
  { name: 'etcd.extraArgs turning client certificates off', config: { etcd: { extraArgs: { 'client-cert-auth': 'false' } } }, want: [/etcd\.extraArgs\.client-cert-auth/, /sets --client-cert-auth itself/] },
  { name: 'etcd.extraArgs value with a line break', config: { etcd: { extraArgs: { 'quota-backend-bytes': '1\nETCD_CLIENT_CERT_AUTH=false' } } }, want: [/etcd\.extraArgs\.quota-backend-bytes/, /line break/] },
  { name: 'unknown ignorePreflightErrors id in the config', config: { ignorePreflightErrors: ['ImagePul'] }, want: [/ignorePreflightErrors/, /"ImagePul" \(did you mean "ImagePull"\?\)/] },
  { name: 'certificatesDir is the system trust store', config: { certificatesDir: '/etc/ssl' }, want: [/certificatesDir/, /trust store/] },
  { name: "certificatesDir inside the kubelet's directory", config: { certificatesDir: '/var/lib/kubelet/pki' }, want: [/certificatesDir/, /inside \/var\/lib\/kubelet/] },
  { name: 'etcd.dataDir is /usr/local', config: { etcd: { dataDir: '/usr/local' } }, want: [/etcd\.dataDir/, /inside \/usr/] },
  { name: 'token create --ttl beyond its maximum', config: {}, command: ['token', 'create', '--ttl', '99999999999h'], want: [/--ttl 99999999999h is more than the maximum 8760h/] },
  // CLI
  { name: '--config names a directory', config: {}, args: ['--config', '/etc'], want: [/\/etc/] },
  { name: 'unknown step in --only', config: {}, args: ['--only', 'certz'], want: [/no step "certz"/] },
  // host state, found by preflight
  { name: 'kubernetesVersion whose images are not on the node and cannot be pulled', config: { kubernetesVersion: 'v1.35.0' }, want: [/\[ImagePull\]/, /kube-apiserver:v1\.35\.0/] },
  // The bed's kubelet is the default version (v1.37.2): a control plane one minor older makes it newer.
  { name: 'kubelet newer than the control plane', config: { kubernetesVersion: 'v1.36.3' }, want: [/\[KubeletVersion\]/, /newer than the control plane/] },
  // A kubelet more than 3 minors older cannot meet a supported minor any more: the minor itself is refused first.
  { name: 'a minor kubeception does not support', config: { kubernetesVersion: 'v1.38.0', dns: { imageTag: 'v1.14.0' } }, want: [/kubernetesVersion/, /1\.38 is not supported: kubeception supports 1\.35, 1\.36, 1\.37/] },
  { name: 'kubelet.cgroupDriver differs from containerd\'s', config: { kubelet: { cgroupDriver: 'cgroupfs' } }, want: [/\[CgroupDriver\]/, /"cgroupfs" in the config, but containerd uses "systemd"/] },
  { name: 'unparsable admin.conf', config: {}, setup: 'mkdir -p /etc/kubernetes && printf "clusters: [oops\\n" > /etc/kubernetes/admin.conf', want: [/\[KubeconfigReadable\]/, /\/etc\/kubernetes\/admin\.conf/] },
  { name: 'unparsable kubelet kubeconfig', config: {}, setup: 'printf "{{{" > /var/lib/kubelet/kubeconfig', cleanup: 'rm -f /var/lib/kubelet/kubeconfig', want: [/\[KubeconfigReadable\]/, /\/var\/lib\/kubelet\/kubeconfig/] },
  { name: 'etcd data dir holds data kubeception did not create', config: {}, setup: 'mkdir -p /var/lib/etcd/default/member && chown -R etcd:etcd /var/lib/etcd/default', cleanup: 'rm -rf /var/lib/etcd/default', want: [/DirAvailable--var-lib-etcd-default/, /did not create/] },
  { name: 'CA certificate that is not PEM', config: {}, setup: 'mkdir -p /etc/kubernetes/pki && printf "garbage" > /etc/kubernetes/pki/ca.crt && printf "garbage" > /etc/kubernetes/pki/ca.key', want: [/\[Certificates\] \/etc\/kubernetes\/pki\/ca\.(crt|key): /] },
  // join flags and join host state
  { name: 'join without --url', config: {}, task: 'join', args: JOIN.slice(2), want: [/--url/] },
  { name: 'join with a malformed token in KUBECEPTION_TOKEN', config: {}, task: 'join', args: JOIN, env: { KUBECEPTION_TOKEN: 'abcdef' }, want: [/\[JoinToken\]/, /token is not of the form/] },
  { name: 'join with a malformed --token (the flag warns)', config: {}, task: 'join', args: [...JOIN, '--token', 'abcdef'], env: {}, want: [/\[JoinToken\]/, /token is not of the form/, FLAG_WARNING] },
  { name: 'join without a token', config: {}, task: 'join', args: JOIN, env: {}, want: [/\[JoinToken\]/, /no token: --token/] },
  { name: 'join with a malformed CA hash', config: {}, task: 'join', args: withFlag('--ca-cert-hash', 'sha256:xyz'), want: [/\[CaCertHash\]/, /sha256:<64 hex digits>/] },
  { name: 'join with an http URL', config: {}, task: 'join', args: withFlag('--url', 'http://10.250.0.9:30000'), want: [/\[JoinUrl\]/, /not an https URL/] },
  { name: 'join with a bad --discovery-timeout', config: {}, task: 'join', args: [...JOIN, '--discovery-timeout', 'soon'], want: [/--discovery-timeout/] },
  { name: 'join on a control-plane node', config: {}, task: 'join', args: JOIN, setup: 'mkdir -p /etc/kubernetes/pki && touch /etc/kubernetes/pki/ca.key', want: [/\[NotControlPlane\]/, /control-plane node/] },
  { name: 'control-plane join without --certificate-key', config: { controlPlaneEndpoint: '10.250.0.9:6443' }, task: 'join', args: [...JOIN, '--control-plane'], want: [/\[CertificateKey\]/, /needs --certificate-key/] },
  { name: 'control-plane join with a short certificate key', config: { controlPlaneEndpoint: '10.250.0.9:6443' }, task: 'join', args: [...JOIN, '--control-plane'], env: { ...TOKEN_ENV, KUBECEPTION_CERTIFICATE_KEY: 'abc123' }, want: [/\[CertificateKey\]/, /not 64 hex digits/] },
  { name: 'control-plane join with a short --certificate-key (the flag warns)', config: { controlPlaneEndpoint: '10.250.0.9:6443' }, task: 'join', args: [...JOIN, '--control-plane', '--certificate-key', 'abc123'], want: [/\[CertificateKey\]/, /not 64 hex digits/, /warning: --certificate-key puts the key on the command line/] },
  { name: 'control-plane join without controlPlaneEndpoint', config: {}, task: 'join', args: [...JOIN, '--control-plane'], env: { ...TOKEN_ENV, KUBECEPTION_CERTIFICATE_KEY: 'a'.repeat(64) }, want: [/\[ControlPlaneEndpoint\]/, /controlPlaneEndpoint is not set/] },
  { name: 'bootstrap on a node that joined as a control-plane node', config: {}, setup: 'printf "# Written by kubeception\\nETCD_INITIAL_CLUSTER_STATE=\\"existing\\"\\n" > /etc/default/etcd', cleanup: 'rm -f /etc/default/etcd', want: [/\[ControlPlaneEndpoint\]/, /joined the cluster as a further control-plane node/] },
  { name: 'join with kubelet.cgroupDriver differing from containerd\'s', config: { kubelet: { cgroupDriver: 'cgroupfs' } }, task: 'join', args: JOIN, want: [/\[CgroupDriver\]/, /containerd uses "systemd"/] },
];

// Two hosts, two cases at a time (each case leaves its host as it found it): half the wall time of one.
describe('bad input: exit 2, named field, host unchanged', { timeout: 600_000, concurrency: 2 }, () => {
  const hosts: Host[] = [];
  const free: Host[] = [];
  const waiting: ((h: Host) => void)[] = [];
  const take = () => (free.length ? Promise.resolve(free.pop()!) : new Promise<Host>((r) => waiting.push(r)));
  const give = (h: Host) => {
    const w = waiting.shift();
    if (w) w(h);
    else free.push(h);
  };
  /** Runs `fn` on a host of the pool, alone on it. */
  const onHost = async (fn: (host: Host) => Promise<void>) => {
    const host = await take();
    try {
      await fn(host);
    } finally {
      give(host);
    }
  };
  before(async () => {
    console.log(`bad inputs: ${cases.length}`);
    hosts.push(...(await Promise.all([bootHost({ name: `${E2E_PREFIX}badin`, hostname: 'Node-A', kubelet: true }), bootHost({ name: `${E2E_PREFIX}badin2`, hostname: 'Node-A', kubelet: true })])));
    free.push(...hosts);
  });
  after(async () => Promise.all(hosts.map((h) => h.destroy())));

  for (const c of cases)
    test(c.name, () => onHost(async (host) => {
      if (c.setup) await host.execOk(['bash', '-c', c.setup]);
      if (c.raw !== undefined) await host.writeFile(`${SITE}/kubeception.config.ts`, c.raw);
      else await writeConfig(host, { distro: 'debian', ...(c.config as object), networking: { plugin: 'none', ...((c.config as { networking?: object } | undefined)?.networking) } });
      const before = await snapshot(host);
      const r = await kc(host, [...(c.command ?? ['run', c.task ?? 'bootstrap']), ...(c.args ?? [])], { env: c.env ?? (c.task === 'join' ? TOKEN_ENV : undefined) });
      assert.equal(r.code, 2, `exit code\n${r.stdout}\n${r.stderr}`);
      for (const w of c.want) assert.match(r.stderr, w);
      assert.match(r.stderr, /fix: /);
      assertSameTree(before, await snapshot(host), c.name);
      if (c.cleanup) await host.execOk(['bash', '-c', c.cleanup]);
      if (c.setup) await host.execOk(['bash', '-c', 'rm -rf /etc/kubernetes /etc/default/etcd.tmp; cp /usr/share/doc/etcd-server/examples/etcd.default /etc/default/etcd 2>/dev/null || printf "# default\\n" > /etc/default/etcd']);
    }));

  test('dry-run writes nothing (file-tree snapshot)', () => onHost(async (host) => {
    await writeConfig(host, { distro: 'debian', networking: { plugin: 'none' } });
    const before = await snapshot(host);
    const r = await kc(host, ['run', 'bootstrap', '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /1\. preflight/);
    assertSameTree(before, await snapshot(host), 'dry-run');
  }));
});
