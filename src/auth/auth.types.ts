import { Field, ObjectType } from 'type-graphql';
import { User } from '../user/user.types';

@ObjectType({ simpleResolvers: true, description: 'A signed-in session' })
export class AuthPayload {
  @Field(() => String, { description: 'Send as the header  Authorization: Bearer <token>' })
  token!: string;

  @Field(() => User, { description: 'The signed-in user' })
  user!: User;
}
