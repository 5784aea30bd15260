/**
 * Step graphs: applying overrides to a task and ordering its steps. Topological order (Kahn's
 * algorithm) with ties broken by declaration order, so the order is stable and readable.
 */
import { TaskDefinitionError } from '../errors.ts';
import { Step, type Edit, type StepSpec, type Task } from './dsl.ts';

/**
 * Applies distro/site edits to a task and returns a new task.
 * @throws TaskDefinitionError (`task-override`) naming the id when an edit targets an unknown step
 *   or inserts a duplicate id.
 */
export function applyEdits<C>(t: Task<C>, edits: readonly Edit<C>[], source: string): Task<C> {
  let steps = [...t.steps] as Step<C>[];
  const indexOf = (id: string) => {
    const i = steps.findIndex((s) => s.spec.id === id);
    if (i < 0)
      throw new TaskDefinitionError('task-override', {
        what: `${source}: step "${id}"`,
        why: `task "${t.name}" has no step "${id}" (it has: ${steps.map((s) => s.spec.id).join(', ')})`,
        fix: `use one of the task's step ids in ${source}`,
      });
    return i;
  };
  const rewire = (from: string, to: readonly string[]) => {
    steps = steps.map((s) =>
      s.spec.needs.includes(from)
        ? new Step<C>({ ...s.spec, needs: [...new Set(s.spec.needs.flatMap((n) => (n === from ? to : [n])))] })
        : s,
    );
  };
  for (const e of edits) {
    const i = indexOf(e.id);
    const target = steps[i]!;
    if (e.kind === 'replace') steps[i] = e.step;
    else if (e.kind === 'remove') {
      steps.splice(i, 1);
      rewire(e.id, target.spec.needs);
    } else {
      if (steps.some((s) => s.spec.id === e.step.spec.id))
        throw new TaskDefinitionError('task-override', {
          what: `${source}: step "${e.step.spec.id}"`,
          why: `task "${t.name}" already has a step with that id`,
          fix: 'give the inserted step a new id, or use replace()',
        });
      if (e.where === 'before') {
        steps.splice(i, 0, e.step);
        steps[i + 1] = target.needs(e.step.spec.id);
      } else {
        rewire(e.id, [e.id, e.step.spec.id]);
        const ins = e.step.spec.needs.includes(e.id) ? e.step : e.step.needs(e.id);
        steps.splice(i + 1, 0, new Step<C>({ ...ins.spec, needs: ins.spec.needs.filter((n) => n !== e.step.spec.id) }));
      }
    }
  }
  return Object.freeze({ name: t.name, steps: Object.freeze(steps), ...(t.concurrent && { concurrent: true }) });
}

/**
 * Orders steps so every step comes after its needs; ties keep declaration order.
 * @returns the specs in execution order.
 * @throws TaskDefinitionError `task-duplicate-step`, `task-unknown-need` (naming the step and the
 *   missing id) or `task-cycle` (naming the steps on the cycle, e.g. `a → b → a`).
 */
export function order<C>(t: Task<C>): StepSpec<C>[] {
  const specs = t.steps.map((s) => s.spec);
  const byId = new Map<string, StepSpec<C>>();
  for (const s of specs) {
    if (byId.has(s.id))
      throw new TaskDefinitionError('task-duplicate-step', {
        what: `task "${t.name}": step "${s.id}"`,
        why: 'two steps share this id',
        fix: 'rename one of them',
      });
    byId.set(s.id, s);
  }
  for (const s of specs)
    for (const n of s.needs)
      if (!byId.has(n))
        throw new TaskDefinitionError('task-unknown-need', {
          what: `task "${t.name}": step "${s.id}" needs "${n}"`,
          why: `there is no step "${n}"`,
          fix: `declare a step "${n}" or remove it from ${s.id}.needs()`,
        });
  const done = new Set<string>();
  const out: StepSpec<C>[] = [];
  while (out.length < specs.length) {
    const next = specs.find((s) => !done.has(s.id) && s.needs.every((n) => done.has(n)));
    if (!next) throw cycleError(t.name, specs.filter((s) => !done.has(s.id)));
    done.add(next.id);
    out.push(next);
  }
  return out;
}

function cycleError<C>(task: string, rest: StepSpec<C>[]): TaskDefinitionError {
  const needs = new Map(rest.map((s) => [s.id, s.needs.filter((n) => rest.some((r) => r.id === n))]));
  // Walk needs from any remaining step until a step repeats: that loop is a cycle.
  const path: string[] = [];
  let cur = rest[0]!.id;
  while (!path.includes(cur)) {
    path.push(cur);
    cur = needs.get(cur)![0]!;
  }
  const cycle = [...path.slice(path.indexOf(cur)), cur];
  return new TaskDefinitionError('task-cycle', {
    what: `task "${task}": ${cycle.join(' → ')}`,
    why: 'these steps need each other in a cycle, so none can start',
    fix: 'remove one of the needs on the cycle',
  });
}
