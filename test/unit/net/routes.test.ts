/** Default routes from the kernel's tables (the text of /proc/net/route and /proc/net/ipv6_route). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRoute4, parseRoute6 } from '../../../lib/net/routes.ts';

const ROUTE4 = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
eth0\t00000000\t0100FA0A\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000FA0A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
down0\t00000000\t0100FA0B\t0002\t0\t0\t0\t00000000\t0\t0\t0
`;
const ROUTE6 = `00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth1
fd002000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
`;

test('IPv4: default routes that are up, lowest metric first; other routes and down ones ignored', () => {
  assert.deepEqual(parseRoute4(ROUTE4).map((r) => r.iface), ['eth0', 'wlan0']);
});

test('IPv6: ::/0 routes, not lo', () => {
  assert.deepEqual(parseRoute6(ROUTE6).map((r) => [r.iface, r.metric]), [['eth1', 0x400]]);
});
