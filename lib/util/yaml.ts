/** YAML: the one wrapper around `yaml`. */
import YAML from 'yaml';

/** Serialises a value as a YAML document (block style, no anchors). */
export function toYaml(value: unknown): string {
  return YAML.stringify(value, { aliasDuplicateObjects: false, lineWidth: 0 });
}

/**
 * Parses one YAML document.
 * @throws Error naming `source` and the position if the text is not valid YAML.
 */
export function fromYaml(text: string, source: string): unknown {
  try {
    return YAML.parse(text);
  } catch (err) {
    throw new Error(`${source}: invalid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}
