/**
 * The DataSource for the TypeORM CLI, e.g.
 *   npx typeorm -d dist/ormconfig.js migration:show
 * It reads DATABASE_URL through the same configuration as the server. It knows the migrations
 * only: the tables are described by them, and the service runs its SQL through src/db/.
 */
import 'reflect-metadata';
import { SqlStatementLog } from './src/db/database';
import { migrationDataSource } from './src/db/migrate';
import { loadConfig } from './src/kernel/config';

export default migrationDataSource(loadConfig().databaseUrl, new SqlStatementLog(console, true), 10);
