/** The Relay Node interface: every object with a global id can be refetched with `node(id)`. */
import { Field, ID, InterfaceType } from 'type-graphql';

@InterfaceType({ description: 'An object with a global id, refetchable with Query.node' })
export abstract class Node {
  @Field(() => ID, { description: 'Opaque global id' })
  id!: string;
}
