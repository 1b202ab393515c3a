/**
 * Fan-out bookkeeping: the transactional outbox of publish/delete events (tb_fanout_task) and
 * the chunks each event is split into (tb_fanout_chunk). See src/fanout/fanout.store.ts.
 */
import { MigrationInterface, QueryRunner } from 'typeorm';
import { tableFor } from './portable';

export class CreateFanoutTables1764576000000 implements MigrationInterface {
  name = 'CreateFanoutTables1764576000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_fanout_task',
        columns: [
          { name: 'id', type: 'bigint', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          // 'deliver' (a published blog goes into inboxes) or 'retract' (a deleted one leaves them).
          { name: 'kind', type: 'varchar', length: '16' },
          { name: 'blog_id', type: 'bigint' },
          { name: 'author_id', type: 'bigint' },
          // The blog's created_at in epoch ms: the inbox score.
          { name: 'score', type: 'bigint' },
          // 'pending' (in the outbox only), 'queued' (its dispatch job is in the queue), 'done'.
          { name: 'status', type: 'varchar', length: '16' },
          // True once every chunk exists; until then cursor_user_id is where dispatch resumes.
          { name: 'dispatched', type: 'boolean', default: false },
          { name: 'cursor_user_id', type: 'bigint', default: 0 },
          { name: 'chunks_total', type: 'int', default: 0 },
          { name: 'chunks_done', type: 'int', default: 0 },
          { name: 'created_at', type: 'datetime', precision: 3 },
          { name: 'queued_at', type: 'datetime', precision: 3, isNullable: true },
          { name: 'finished_at', type: 'datetime', precision: 3, isNullable: true },
        ],
        indices: [{ name: 'ix_fanout_task_status', columnNames: ['status', 'id'] }],
      }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_fanout_chunk',
        columns: [
          { name: 'task_id', type: 'bigint', isPrimary: true },
          { name: 'seq', type: 'int', isPrimary: true },
          // The chunk covers the followers with after_user_id < user_id <= through_user_id.
          { name: 'after_user_id', type: 'bigint' },
          { name: 'through_user_id', type: 'bigint' },
          // How many times an executor started this chunk (more than 1 = redone after a failure).
          { name: 'runs', type: 'int', default: 0 },
          { name: 'finished_at', type: 'datetime', precision: 3, isNullable: true },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tb_fanout_chunk');
    await queryRunner.dropTable('tb_fanout_task');
  }
}
