import { GraphQLError } from 'graphql';
import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { Context, requireViewerId } from '../graphql/context';
import { ErrorCode } from '../kernel/errors';
import type { TokenCheck, ViewerToken } from './auth.tokens';
import { AuthPayload } from './auth.types';

@Resolver()
export class AuthResolver {
  @Mutation(() => AuthPayload, { description: 'Creates an account and signs in' })
  async signUp(
    @Arg('nickName', () => String, {
      description:
        '1..32 characters, no leading or trailing white space; unique without regard to case or width ("Alice" and "ａｌｉｃｅ" are one name)',
    })
    nickName: string,
    @Arg('password', () => String, { description: '8..256 characters' }) password: string,
    @Ctx() { services, ip, wrote }: Context,
  ): Promise<AuthPayload> {
    await services.rateLimits.signUp(ip);
    const payload = await services.auth.signUp(nickName, password);
    // The new account's first requests must find it, though no replica may have it yet.
    wrote(payload.user.dbId);
    return payload;
  }

  @Mutation(() => AuthPayload, {
    description:
      'Signs in: a new session, whose token expires after a while (7 days unless the operator set otherwise)',
  })
  async login(
    @Arg('nickName', () => String, { description: 'The nickName as signed up, in any case or width' }) nickName: string,
    @Arg('password', () => String, { description: 'The password' }) password: string,
    @Ctx() { services, ip }: Context,
  ): Promise<AuthPayload> {
    await services.rateLimits.login(ip, nickName);
    try {
      return await services.auth.login(nickName, password);
    } catch (error) {
      if (error instanceof GraphQLError && error.extensions.code === ErrorCode.UNAUTHENTICATED)
        await services.rateLimits.loginFailed(ip, nickName);
      throw error;
    }
  }

  @Mutation(() => Boolean, {
    description: "Ends this token's session: from then on the token is refused, in every API process. Always true.",
  })
  async logout(@Ctx() { auth, services }: Context): Promise<boolean> {
    await services.auth.logout(viewerToken(auth));
    return true;
  }

  @Mutation(() => Boolean, {
    description:
      'Ends every session of the viewer, this one included: every token issued to them so far is refused, in every API process. Always true.',
  })
  async logoutEverywhere(@Ctx() { auth, services }: Context): Promise<boolean> {
    await services.auth.logoutEverywhere(viewerToken(auth).userId);
    return true;
  }
}

/** The viewer's token; UNAUTHENTICATED when there is none. */
function viewerToken(auth: TokenCheck): ViewerToken {
  requireViewerId(auth);
  return auth as ViewerToken;
}
