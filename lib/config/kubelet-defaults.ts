/**
 * The KubeletConfiguration defaults kubeception acts on besides writing them (CIS Kubernetes
 * Benchmark, issue 26): each is on unless `kubelet.extraConfig` turns it off with the kubelet's own
 * field name (docs/configuration.md, docs/cis.md).
 * - `serverTLSBootstrap`: the kubelet's serving certificate comes from the cluster CA (by CSR, which
 *   kubeception's approver decides; signed on the host for a control-plane node), and the apiserver
 *   verifies it (`--kubelet-certificate-authority`).
 * - `protectKernelDefaults`: kubeception sets the kernel tunables the kubelet checks
 *   (lib/steps/bootstrap/kernel-tunables.ts).
 */
import type { ResolvedConfig } from '../types.ts';

/** The effective `serverTLSBootstrap`: true unless `kubelet.extraConfig.serverTLSBootstrap` is false. */
export const serverTLSBootstrap = (config: Pick<ResolvedConfig, 'kubelet'>): boolean => config.kubelet.extraConfig.serverTLSBootstrap !== false;

/** The effective `protectKernelDefaults`: true unless `kubelet.extraConfig.protectKernelDefaults` is false. */
export const protectKernelDefaults = (config: Pick<ResolvedConfig, 'kubelet'>): boolean => config.kubelet.extraConfig.protectKernelDefaults !== false;
