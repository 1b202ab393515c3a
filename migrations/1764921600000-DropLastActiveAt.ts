/**
 * tb_user.last_active_at was written on activity (an UPDATE per active user every few minutes
 * per process) and read by nothing: an inbox's expiry, pushed back on activity, is what makes
 * fan-out skip a follower inactive for ACTIVE_DAYS (src/feed/feed.service.ts recordActivity).
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

export class DropLastActiveAt1764921600000 implements MigrationInterface {
  name = 'DropLastActiveAt1764921600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tb_user', 'last_active_at');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn(
      'tb_user',
      new TableColumn({ name: 'last_active_at', type: 'datetime', precision: 3, isNullable: true }),
    );
  }
}
