/**
 * Relay global ids: base64("<Type>:<database id>"). Opaque to clients, and unique across types,
 * so `node(id)` can find any object from its id alone.
 */
import { badUserInput } from './errors';

export type NodeType = 'User' | 'Blog';
const NODE_TYPES: readonly string[] = ['User', 'Blog'];

export function toGlobalId(type: NodeType, id: number): string {
  return Buffer.from(`${type}:${id}`, 'utf8').toString('base64');
}

export interface DecodedId {
  type: NodeType;
  id: number;
}

/** Decodes any global id; throws BAD_USER_INPUT naming the argument and what it received. */
export function fromGlobalId(globalId: string, argument = 'id'): DecodedId {
  const shown = globalId.length > 40 ? `${globalId.slice(0, 40)}...` : globalId;
  const malformed = () => badUserInput(`${argument} "${shown}" is not an id this API returned`, argument);
  if (globalId.length === 0 || globalId.length > 64 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(globalId)) {
    throw malformed();
  }
  const match = /^([A-Za-z]+):([1-9]\d{0,15})$/.exec(Buffer.from(globalId, 'base64').toString('utf8'));
  if (!match || !NODE_TYPES.includes(match[1]) || !Number.isSafeInteger(Number(match[2]))) {
    throw malformed();
  }
  return { type: match[1] as NodeType, id: Number(match[2]) };
}

/** Decodes a global id that must name a `type`; a well-formed id of another type is bad input. */
export function idOfType(globalId: string, type: NodeType, argument: string): number {
  const decoded = fromGlobalId(globalId, argument);
  if (decoded.type !== type) {
    throw badUserInput(`${argument} "${globalId}" is a ${decoded.type} id, expected a ${type} id`, argument);
  }
  return decoded.id;
}
