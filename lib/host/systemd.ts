/**
 * systemd over D-Bus: the one wrapper around `dbus-next`. Connects to the system bus (honouring
 * `DBUS_SYSTEM_BUS_ADDRESS`) lazily, on first use, so `plan` works on machines without systemd.
 *
 * Host effects: daemon reload, unit files enabled, units started/restarted/stopped.
 * @see https://www.freedesktop.org/wiki/Software/systemd/dbus/
 */
import type dbus from 'dbus-next';
import { KubeceptionError, UnitError } from '../errors.ts';

/** A unit's `ActiveState`: `active`, `inactive`, `failed`, `activating`, `deactivating`, `reloading`. */
export type ActiveState = string;

/** How {@link Systemd.start} runs and watches a start. */
export interface StartOptions {
  /** RestartUnit instead of StartUnit. */
  restart?: boolean;
  /** Milliseconds the job may take (default 90 000). */
  timeoutMs?: number;
  /** Milliseconds the started unit is watched for a crash loop (default 1 500; 0 for `Type=notify`). */
  settleMs?: number;
  /** The service is past its start-up checks; ends the watch early (never throws). */
  ready?: () => Promise<boolean>;
}

/** What kubeception asks of systemd. */
export interface Systemd {
  /** `systemctl daemon-reload`. */
  reload(): Promise<void>;
  /**
   * `systemctl enable UNIT…`; returns true if a symlink changed. A change is followed by a
   * daemon-reload unless `opts.reload` is false (`--no-reload`: the caller reloads later itself).
   */
  enable(units: string[], opts?: { reload?: boolean }): Promise<boolean>;
  /** `systemctl disable UNIT…`; returns true if a symlink changed. Optional for test doubles. */
  disable?(units: string[]): Promise<boolean>;
  /** Starts (`mode` `start`) or restarts a unit and waits for its job. @throws UnitError if the job fails. */
  start(unit: string, opts?: StartOptions): Promise<void>;
  /** Stops a unit and waits for its job. */
  stop(unit: string, opts?: { timeoutMs?: number }): Promise<void>;
  /** The unit's `ActiveState`. */
  activeState(unit: string): Promise<ActiveState>;
  /** The unit file state (`enabled`, `disabled`, `static`, …), or `not-found`. */
  unitFileState(unit: string): Promise<string>;
  /** The service's `MainPID` (0 when it has no running main process). Optional for test doubles. */
  mainPid?(unit: string): Promise<number>;
  /** Closes the bus connection. */
  close(): void;
}

const DEST = 'org.freedesktop.systemd1';
const PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';

/**
 * The part of systemd's Manager interface kubeception uses, as introspection XML (signatures from
 * org.freedesktop.systemd1(5)). Given to dbus-next instead of asking systemd: the full document is
 * large, and parsing it cost more CPU than the rest of a converged run's D-Bus work.
 */
const MANAGER_XML = `<node><interface name="${MANAGER}">
<method name="Subscribe"/>
<method name="Reload"/>
<method name="EnableUnitFiles"><arg type="as" direction="in"/><arg type="b" direction="in"/><arg type="b" direction="in"/><arg type="b" direction="out"/><arg type="a(sss)" direction="out"/></method>
<method name="DisableUnitFiles"><arg type="as" direction="in"/><arg type="b" direction="in"/><arg type="a(sss)" direction="out"/></method>
<method name="StartUnit"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
<method name="RestartUnit"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
<method name="StopUnit"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
<method name="LoadUnit"><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
<method name="GetUnitFileState"><arg type="s" direction="in"/><arg type="s" direction="out"/></method>
<signal name="JobRemoved"><arg type="u"/><arg type="o"/><arg type="s"/><arg type="s"/></signal>
</interface></node>`;

/** The D-Bus methods kubeception calls; dbus-next generates them from {@link MANAGER_XML}. */
type DbusMethod = (...args: unknown[]) => Promise<any>;
type Manager = Record<string, DbusMethod> & { on(event: string, fn: (...args: any[]) => void): void };

function busError(what: string, err: unknown): KubeceptionError {
  return new KubeceptionError('systemd-dbus', {
    what,
    why: `the system D-Bus call failed: ${(err as Error)?.message ?? err}`,
    fix: 'run kubeception as root on a host whose PID 1 is systemd (check DBUS_SYSTEM_BUS_ADDRESS if set)',
    cause: err,
  });
}

/** systemd reached over the real system bus. `journal` returns a unit's last log lines for errors. */
export class DbusSystemd implements Systemd {
  private bus?: dbus.MessageBus;
  private Message?: typeof dbus.Message;
  private manager?: Promise<Manager>;
  /** Finished jobs by object path → result (`done`, `failed`, `timeout`, …). */
  private readonly finished = new Map<string, string>();
  private readonly waiters = new Map<string, (result: string) => void>();
  private lastError?: Error;

  constructor(private readonly journal: (unit: string) => Promise<string[]> = async () => []) {}

  private connect(): Promise<Manager> {
    this.manager ??= (async () => {
      try {
        // Imported on first use: `--help` and `plan` without systemd queries never load dbus-next.
        const { default: dbusNext } = await import('dbus-next');
        const bus = dbusNext.systemBus();
        this.bus = bus;
        this.Message = dbusNext.Message;
        // A lost connection must surface as a typed error from the pending call, not crash the process.
        bus.on('error', (err: Error) => {
          this.lastError = err;
          this.manager = undefined;
        });
        const failed = new Promise<never>((_, reject) => bus.once('error', reject));
        failed.catch(() => {});
        const obj = await Promise.race([bus.getProxyObject(DEST, PATH, MANAGER_XML), failed]);
        const m = obj.getInterface(MANAGER) as unknown as Manager;
        await m.Subscribe!();
        m.on('JobRemoved', (_id: number, job: string, _unit: string, result: string) => {
          const w = this.waiters.get(job);
          if (w) w(result);
          else this.finished.set(job, result);
        });
        return m;
      } catch (err) {
        this.bus?.disconnect();
        this.manager = undefined;
        throw busError('system bus', this.lastError ?? err);
      }
    })();
    return this.manager;
  }

  private async call<T>(what: string, fn: (m: Manager) => Promise<T>): Promise<T> {
    const m = await this.connect();
    try {
      return await fn(m);
    } catch (err) {
      throw busError(what, err);
    }
  }

  reload(): Promise<void> {
    return this.call('daemon-reload', (m) => m.Reload!());
  }

  async enable(units: string[], opts: { reload?: boolean } = {}): Promise<boolean> {
    const [, changes] = (await this.call(`enable ${units.join(' ')}`, (m) => m.EnableUnitFiles!(units, false, true))) as [boolean, unknown[]];
    if ((changes as unknown[]).length && opts.reload !== false) await this.reload();
    return (changes as unknown[]).length > 0;
  }

  async disable(units: string[]): Promise<boolean> {
    // DisableUnitFiles has one out argument: the list of changes itself.
    const changes = (await this.call(`disable ${units.join(' ')}`, (m) => m.DisableUnitFiles!(units, false))) as unknown[];
    if (changes.length) await this.reload();
    return changes.length > 0;
  }

  /**
   * Runs the job, then watches the unit for `settleMs` (default 1 500; 0 for a `Type=notify` unit,
   * whose job ends only when it reports ready): it must be `active` and must
   * not have restarted. A unit that exits at once and is restarted by systemd (`activating
   * (auto-restart)`, a crash loop) fails here with its journal, instead of counting as started.
   * `ready` ends the watch early: once it resolves true while the unit is active and has not
   * restarted, the service is past its start-up checks (the kubelet's `/healthz` answers only after
   * its configuration, runtime and certificates were accepted). It is asked every 100 ms.
   */
  async start(unit: string, opts: StartOptions = {}): Promise<void> {
    const method = opts.restart ? 'RestartUnit' : 'StartUnit';
    await this.runJob(unit, method, opts.timeoutMs ?? 90_000);
    const restarts0 = Number(await this.unitProperty(unit, 'org.freedesktop.systemd1.Service', 'NRestarts').catch(() => 0));
    // A Type=notify unit's job is done only once the service said READY=1 (etcd does): it is past
    // the point where a bad configuration makes it exit, so it needs no settling time.
    const type = String(await this.unitProperty(unit, 'org.freedesktop.systemd1.Service', 'Type').catch(() => ''));
    const deadline = Date.now() + (opts.settleMs ?? (type === 'notify' || type === 'notify-reload' ? 0 : 1_500));
    for (;;) {
      const [state, sub] = [await this.activeState(unit), String(await this.unitProperty(unit, 'org.freedesktop.systemd1.Unit', 'SubState'))];
      const restarts = Number(await this.unitProperty(unit, 'org.freedesktop.systemd1.Service', 'NRestarts').catch(() => restarts0));
      const looping = sub === 'auto-restart' || restarts > restarts0;
      if (looping || (state !== 'active' && state !== 'activating'))
        throw new UnitError(unit, `the unit is ${state} (${sub}) after ${method}${looping ? ': its process exits and systemd restarts it (crash loop)' : ''}`, await this.journal(unit));
      if (state === 'active' && (Date.now() >= deadline || (opts.ready && (await opts.ready())))) return;
      if (Date.now() >= deadline + 60_000) throw new UnitError(unit, `the unit is still ${state} (${sub}) a minute after ${method}`, await this.journal(unit));
      await new Promise((r) => setTimeout(r, opts.ready ? 100 : 250));
    }
  }

  async stop(unit: string, opts: { timeoutMs?: number } = {}): Promise<void> {
    await this.runJob(unit, 'StopUnit', opts.timeoutMs ?? 90_000);
  }

  private async runJob(unit: string, method: string, timeoutMs: number): Promise<void> {
    const job: string = await this.call(`${method} ${unit}`, (m) => m[method]!(unit, 'replace'));
    const result = await new Promise<string>((resolve) => {
      const early = this.finished.get(job);
      if (early !== undefined) {
        this.finished.delete(job);
        return resolve(early);
      }
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      this.waiters.set(job, (r) => {
        clearTimeout(timer);
        this.waiters.delete(job);
        resolve(r);
      });
    });
    if (result !== 'done')
      throw new UnitError(unit, `${method} finished with result "${result}"`, await this.journal(unit));
  }

  async activeState(unit: string): Promise<ActiveState> {
    return String(await this.unitProperty(unit, 'org.freedesktop.systemd1.Unit', 'ActiveState'));
  }

  /** One D-Bus property of a unit (`iface` e.g. `org.freedesktop.systemd1.Unit`). */
  private async unitProperty(unit: string, iface: string, name: string): Promise<unknown> {
    const path: string = await this.call(`LoadUnit ${unit}`, (m) => m.LoadUnit!(unit));
    try {
      // org.freedesktop.DBus.Properties.Get as a plain method call: a proxy object would introspect
      // the unit first (a large XML document parsed on every call — most of a re-run's D-Bus time).
      const reply = await this.bus!.call(new this.Message!({ destination: DEST, path, interface: 'org.freedesktop.DBus.Properties', member: 'Get', signature: 'ss', body: [iface, name] }));
      const v = reply?.body[0] as { value: unknown } | undefined;
      if (!v) throw new Error(`no reply to Properties.Get ${iface}.${name}`);
      return typeof v.value === 'bigint' ? Number(v.value) : v.value;
    } catch (err) {
      throw busError(`${name} of ${unit}`, err);
    }
  }

  async mainPid(unit: string): Promise<number> {
    return Number(await this.unitProperty(unit, 'org.freedesktop.systemd1.Service', 'MainPID'));
  }

  async unitFileState(unit: string): Promise<string> {
    const m = await this.connect();
    try {
      return String(await m.GetUnitFileState!(unit));
    } catch (err) {
      if (String((err as Error).message).includes('No such file')) return 'not-found';
      throw busError(`GetUnitFileState ${unit}`, err);
    }
  }

  close(): void {
    this.bus?.disconnect();
    this.bus = undefined;
    this.manager = undefined;
  }
}
