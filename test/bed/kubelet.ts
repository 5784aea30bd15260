import type { Bind } from './state.ts';
import type { Host } from './bed.ts';
export interface KubeletHostOptions {}
export function kubeletBinds(): Bind[] { return []; }
export async function prepareKubeletHost(_host: Host, _opts: KubeletHostOptions = {}): Promise<void> {}
