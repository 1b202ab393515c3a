/**
 * For the purge of finished fan-out tasks (FANOUT_RETENTION_DAYS): an index on
 * (status, finished_at), so that each purge batch is one index range of the oldest finished
 * tasks, never a scan over the week of tasks that are kept.
 */
import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

export class FanoutRetention1764835200000 implements MigrationInterface {
  name = 'FanoutRetention1764835200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex(
      'tb_fanout_task',
      new TableIndex({ name: 'ix_fanout_task_finished', columnNames: ['status', 'finished_at'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('tb_fanout_task', 'ix_fanout_task_finished');
  }
}
