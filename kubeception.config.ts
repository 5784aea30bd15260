/**
 * The site config: what an operator edits first. Field names are kubeadm's
 * (ClusterConfiguration / InitConfiguration); every field is optional. See lib/types.ts.
 */
import { defineConfig } from './lib/config/load.ts';

export default defineConfig({
  // distro: 'debian',               // default: detected from /etc/os-release
  kubernetesVersion: 'v1.37.2',     // supported minors: 1.35, 1.36, 1.37 (manifests/addons/versions.ts)
  // nodeName: 'master-1',           // default: the host name, lower-cased
  // localAPIEndpoint: { advertiseAddress: '10.0.0.10', bindPort: 6443 },
  bootstrapAPIEndpoint: { bindPort: 6444 },
  networking: {
    podSubnet: '10.244.0.0/16',
    serviceSubnet: '10.96.0.0/12',
    dnsDomain: 'cluster.local',
  },
  encryptionAlgorithm: 'ECDSA-P256', // or RSA-2048 (kubeadm's default), RSA-3072, RSA-4096, ECDSA-P384
  apiServer: {
    extraSANs: [],
    // CIS hardening defaults, each on unless disabled (docs/configuration.md, "Hardening defaults"):
    // auditLog: { maxAgeDays: 30, maxBackups: 10, maxSizeMB: 100 }, // dir: /var/log/kubernetes/audit
    // secretsEncryption: { disabled: false },                        // secretbox key in certificatesDir
    // podSecurity: { enforce: 'baseline', warn: 'restricted', audit: 'restricted', exemptNamespaces: [] },
  },
  kubelet: { cgroupDriver: 'systemd' },
});
