/**
 * What `users(search:)` reads: tb_user.nick_len, the length of nick_key in characters, and the
 * index ix_user_nick_rank (nick_len, nick_key). Search results come in the order (nick_len,
 * nick_key): the exact match first, then shorter keys before longer ones, then keys in code
 * point order. A page is one read of that index: one range per key length, each holding exactly
 * the keys that start with the search text, read in index order and stopped after the page
 * (src/user/user.store.ts), however many users there are.
 *
 * nick_len is a generated (VIRTUAL) column: the database computes it from nick_key, so every
 * writer of nick_key (sign-up, a change of nickName) keeps it right without knowing of it.
 * TypeORM reads the expression of a generated column from its typeorm_metadata table whenever it
 * loads the table's definition (a later migration that adds a column or index to tb_user), so
 * the expression is recorded there as TypeORM itself would record it.
 */
import { MigrationInterface, QueryRunner, Table } from 'typeorm';

const GENERATED_COLUMN = 'GENERATED_COLUMN';

export class UserSearchRank1766130000000 implements MigrationInterface {
  name = 'UserSearchRank1766130000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    // CHAR_LENGTH and SQLite's length() both count characters (code points), as the service does.
    const expression = mysql ? 'CHAR_LENGTH(nick_key)' : 'length(nick_key)';
    await queryRunner.query(
      mysql
        ? `ALTER TABLE tb_user ADD COLUMN nick_len SMALLINT UNSIGNED AS (${expression}) VIRTUAL`
        : `ALTER TABLE tb_user ADD COLUMN nick_len INTEGER GENERATED ALWAYS AS (${expression}) VIRTUAL`,
    );
    await queryRunner.query('CREATE INDEX ix_user_nick_rank ON tb_user (nick_len, nick_key)');
    await recordGeneratedColumn(queryRunner, mysql, expression);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.query(mysql ? 'DROP INDEX ix_user_nick_rank ON tb_user' : 'DROP INDEX ix_user_nick_rank');
    await queryRunner.query('ALTER TABLE tb_user DROP COLUMN nick_len');
    await queryRunner.manager
      .createQueryBuilder()
      .delete()
      .from('typeorm_metadata')
      .where('type = :type AND name = :name', { type: GENERATED_COLUMN, name: 'nick_len' })
      .execute();
  }
}

/** The row TypeORM keeps for a generated column (its own addColumn writes the same), in the table it creates for it. */
async function recordGeneratedColumn(queryRunner: QueryRunner, mysql: boolean, expression: string): Promise<void> {
  const text = (name: string, isNullable = true) => ({ name, type: 'varchar', length: '255', isNullable });
  await queryRunner.createTable(
    new Table({
      name: 'typeorm_metadata',
      columns: [
        text('type', false),
        text('database'),
        text('schema'),
        text('table'),
        text('name'),
        { name: 'value', type: 'text', isNullable: true },
      ],
    }),
    true,
  );
  // On MySQL TypeORM looks the row up by the database's name (its "schema"); on SQLite by table alone.
  const schema = mysql
    ? ((await queryRunner.query('SELECT DATABASE() AS name')) as Array<{ name: string }>)[0].name
    : undefined;
  await queryRunner.manager
    .createQueryBuilder()
    .insert()
    .into('typeorm_metadata')
    .values({ type: GENERATED_COLUMN, schema, table: 'tb_user', name: 'nick_len', value: expression })
    .execute();
}
