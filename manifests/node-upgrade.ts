/**
 * The NodeUpgradePlan CustomResourceDefinition (`nodeupgradeplans.kubeception.io`, v1alpha1,
 * cluster-scoped, with a status subresource): one object drives the node upgrade controller (see
 * lib/node-upgrade/). `kubectl get nodeupgradeplans` shows the target, the phase and the batch.
 * Its fields are documented on the types in lib/node-upgrade/types.ts. Applied by
 * `upgrade apply --nodes` (never by bootstrap).
 * @see https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/
 */
import type { V1CustomResourceDefinition, V1JSONSchemaProps } from '@kubernetes/client-node';
import { NODE_UPGRADE_GROUP, NODE_UPGRADE_KIND, NODE_UPGRADE_PLURAL, NODE_UPGRADE_VERSION } from '../lib/node-upgrade/types.ts';
import { MANAGED_BY, type Manifest } from './common.ts';

export const NODE_UPGRADE_CRD_NAME = `${NODE_UPGRADE_PLURAL}.${NODE_UPGRADE_GROUP}`;

const str = (description: string, extra: V1JSONSchemaProps = {}): V1JSONSchemaProps => ({ type: 'string', description, ...extra });
const int = (description: string, minimum: number): V1JSONSchemaProps => ({ type: 'integer', format: 'int32', minimum, description });

const specSchema: V1JSONSchemaProps = {
  type: 'object',
  required: ['targetVersion'],
  properties: {
    targetVersion: str('The kubelet version every selected Node ends at, e.g. v1.37.2.', { pattern: '^v\\d+\\.\\d+\\.\\d+$' }),
    nodeSelector: { type: 'object', description: 'Labels a Node must all carry to be upgraded; none: every Node.', additionalProperties: { type: 'string' } },
    maxUnavailable: int('At most this many selected Nodes out of service at once (a batch). Default 1.', 1),
    paused: { type: 'boolean', description: 'True: the controller changes nothing.' },
    rollback: { type: 'boolean', description: 'True on a Failed plan (kubeception upgrade rollback): failed Nodes their agents rolled back to the previous kubelet return to service; the plan ends RolledBack.' },
    nodeTimeoutSeconds: int("One Node's limit from its cordon to Ready at the target. Default 1800.", 1),
    drain: { type: 'object', properties: { timeoutSeconds: int('How long evictions refused by a PodDisruptionBudget are retried. Default 300.', 1) } },
    healthGate: {
      type: 'object',
      properties: {
        namespaces: { type: 'array', items: { type: 'string' }, description: "Namespaces whose workloads' pods must be Ready between batches; none: all." },
        timeoutSeconds: int('How long a finished batch waits for the gate before the rollout fails. Default 300.', 1),
      },
    },
  },
};

const condition: V1JSONSchemaProps = {
  type: 'object',
  required: ['type', 'status'],
  properties: { type: str('Progressing, Paused, Failed, Complete or RolledBack.'), status: str('True or False.'), reason: str('CamelCase reason.'), message: str('What happened, naming the Node.'), lastTransitionTime: str('RFC 3339.', { format: 'date-time' }) },
};

const statusSchema: V1JSONSchemaProps = {
  type: 'object',
  properties: {
    phase: str('Pending, Progressing, Paused, Failed, Complete or RolledBack.'),
    batch: int('The batch under way or last finished (0: none).', 0),
    batchUpgradedAt: str('When every Node of the current batch was done.', { format: 'date-time' }),
    held: { type: 'array', items: { type: 'string' }, description: 'Selected Nodes an operator cordoned: left alone.' },
    observedGeneration: { type: 'integer', format: 'int64' },
    conditions: { type: 'array', items: condition },
    nodes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'phase', 'batch'],
        properties: {
          name: str('The Node.'), phase: str('Draining, Upgrading, Done, Failed, Stopped or RolledBack.'), batch: int('Its batch.', 1), fromVersion: str('Its kubelet version when its batch started.'),
          cordonedByUs: { type: 'boolean', description: 'kubeception set its cordon (only such a cordon is lifted).' }, startedAt: str('When its batch started it.', { format: 'date-time' }), message: str('Why it failed, or what it waits for.'),
          rolledBack: { type: 'boolean', description: 'Failed only: its agent put the previous kubelet back and saw it Ready.' },
        },
      },
    },
  },
};

/** The CRD. Pure. */
export function nodeUpgradeCrd(): Manifest<V1CustomResourceDefinition> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: NODE_UPGRADE_CRD_NAME, labels: { ...MANAGED_BY } },
    spec: {
      group: NODE_UPGRADE_GROUP,
      scope: 'Cluster',
      names: { plural: NODE_UPGRADE_PLURAL, singular: 'nodeupgradeplan', kind: NODE_UPGRADE_KIND, listKind: `${NODE_UPGRADE_KIND}List`, shortNames: ['nup'] },
      versions: [{
        name: NODE_UPGRADE_VERSION, served: true, storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', required: ['spec'], properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec: specSchema, status: statusSchema } } },
        additionalPrinterColumns: [
          { name: 'Target', type: 'string', jsonPath: '.spec.targetVersion' },
          { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
          { name: 'Batch', type: 'integer', jsonPath: '.status.batch' },
          { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
      }],
    },
  };
}
