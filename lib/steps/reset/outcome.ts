import type { StepOutcome } from '../../engine/dsl.ts';

/** A reset step's outcome: changed when `changed` lists anything (joined as the detail), else `none`. */
export const resetOutcome = (changed: string[], none: string): StepOutcome => ({ changed: changed.length > 0, detail: changed.length ? changed.join(', ') : none });
