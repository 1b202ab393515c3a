/**
 * Ending sessions (src/auth/auth.sessions.ts):
 * - tb_user.token_version: every token carries the version its user had when it was issued; a
 *   token of an older version is refused. `logoutEverywhere` counts it up.
 * - tb_revoked_token: tokens ended one by one (`logout`), by their id (the jti claim), each kept
 *   until the token would have expired anyway (expires_at); ix_revoked_token_user reads one
 *   user's at once, ix_revoked_token_expires finds the expired ones to delete.
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { tableFor } from './portable';

export class Sessions1765360000000 implements MigrationInterface {
  name = 'Sessions1765360000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('tb_user', new TableColumn({ name: 'token_version', type: 'int', default: 0 }));
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_revoked_token',
        columns: [
          // Token ids are base64url: ASCII, compared byte for byte.
          { name: 'jti', type: 'varchar', length: '64', isPrimary: true, charset: 'ascii', collation: 'ascii_bin' },
          { name: 'user_id', type: 'bigint' },
          { name: 'expires_at', type: 'datetime', precision: 3 },
        ],
        indices: [
          { name: 'ix_revoked_token_user', columnNames: ['user_id', 'expires_at'] },
          { name: 'ix_revoked_token_expires', columnNames: ['expires_at'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tb_revoked_token');
    await queryRunner.dropColumn('tb_user', 'token_version');
  }
}
