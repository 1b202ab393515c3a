/** The SQL of sessions and passwords: tb_user.token_version and .password, tb_revoked_token. */
import type { Database } from '../db/database';

/** What ends a user's tokens (auth/auth.sessions.ts). */
export interface SessionState {
  /** Tokens issued with a lower version are ended (logoutEverywhere counts it up). */
  tokenVersion: number;
  /** Ids of the user's tokens ended one by one (logout) that have not expired yet. */
  revoked: ReadonlySet<string>;
}

export class AuthStore {
  constructor(private readonly db: Database) {}

  /**
   * The session state of each user, in one statement; users that do not exist are absent. From
   * the primary: a replica may not have the logout yet, and a process that just heard of one
   * must not learn it back as undone.
   */
  async sessionStates(userIds: readonly number[], now: Date): Promise<Map<number, SessionState>> {
    const states = new Map<number, { tokenVersion: number; revoked: Set<string> }>();
    if (userIds.length === 0) return states;
    const rows = await this.db.select<{ id: string | number; token_version: string | number; jti: string | null }>(
      `SELECT u.id, u.token_version, r.jti FROM tb_user u
       LEFT JOIN tb_revoked_token r ON r.user_id = u.id AND r.expires_at > ?
       WHERE u.id IN (?)`,
      [now, userIds],
    );
    for (const row of rows) {
      const id = Number(row.id);
      let state = states.get(id);
      if (!state) states.set(id, (state = { tokenVersion: Number(row.token_version), revoked: new Set() }));
      if (row.jti !== null) state.revoked.add(row.jti);
    }
    return states;
  }

  /**
   * Ends one token until `expiresAt`, when it would stop working anyway; idempotent. Deletes the
   * entries that have expired (the index on expires_at makes that a range of the oldest ones),
   * so the table holds only the tokens ended within one token lifetime.
   */
  async revoke(jti: string, userId: number, expiresAt: Date, now: Date): Promise<void> {
    await this.db.write('INSERT IGNORE INTO tb_revoked_token (jti, user_id, expires_at) VALUES (?, ?, ?)', [
      jti,
      userId,
      expiresAt,
    ]);
    await this.db.write('DELETE FROM tb_revoked_token WHERE expires_at <= ?', [now]);
  }

  /** Ends every token of the user issued so far: counts the user's token version up. */
  async endAllSessions(userId: number): Promise<void> {
    await this.db.write('UPDATE tb_user SET token_version = token_version + 1 WHERE id = ?', [userId]);
  }

  /** Replaces a password hash with a stronger one of the same password, unless it changed meanwhile. */
  async replacePasswordHash(userId: number, from: string, to: string): Promise<void> {
    await this.db.write('UPDATE tb_user SET password = ? WHERE id = ? AND password = ?', [to, userId, from]);
  }
}
