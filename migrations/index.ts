/**
 * Every migration, in order. Listed as classes (not a glob) so the same list works compiled,
 * under ts-jest, and for the TypeORM CLI (ormconfig.ts).
 */
import { CreateFeedTables1764489600000 } from './1764489600000-CreateFeedTables';
import { CreateFanoutTables1764576000000 } from './1764576000000-CreateFanoutTables';
import { FeedModels1764662400000 } from './1764662400000-FeedModels';
import { FeedVersion1764748800000 } from './1764748800000-FeedVersion';
import { FanoutRetention1764835200000 } from './1764835200000-FanoutRetention';
import { DropLastActiveAt1764921600000 } from './1764921600000-DropLastActiveAt';
import { SocialGraphIndexes1765008000000 } from './1765008000000-SocialGraphIndexes';
import { BlogLiveIndex1765094400000 } from './1765094400000-BlogLiveIndex';
import { Sessions1765360000000 } from './1765360000000-Sessions';
import { PublishIdempotencyKey1765370000000 } from './1765370000000-PublishIdempotencyKey';
import { FanoutTraceContext1765450000000 } from './1765450000000-FanoutTraceContext';
import { FeedGenerations1765785600000 } from './1765785600000-FeedGenerations';
import { FanoutWatermarked1765872000000 } from './1765872000000-FanoutWatermarked';
import { UserSearchRank1766130000000 } from './1766130000000-UserSearchRank';
import { MuteAndBlock1766220000000 } from './1766220000000-MuteAndBlock';
import { BlogEditsAndCacheDebts1766230000000 } from './1766230000000-BlogEditsAndCacheDebts';
import { DropBlogUserCreatedIndex1766240000000 } from './1766240000000-DropBlogUserCreatedIndex';

export const MIGRATIONS = [
  CreateFeedTables1764489600000,
  CreateFanoutTables1764576000000,
  FeedModels1764662400000,
  FeedVersion1764748800000,
  FanoutRetention1764835200000,
  DropLastActiveAt1764921600000,
  SocialGraphIndexes1765008000000,
  BlogLiveIndex1765094400000,
  Sessions1765360000000,
  PublishIdempotencyKey1765370000000,
  FanoutTraceContext1765450000000,
  FeedGenerations1765785600000,
  FanoutWatermarked1765872000000,
  UserSearchRank1766130000000,
  MuteAndBlock1766220000000,
  BlogEditsAndCacheDebts1766230000000,
  DropBlogUserCreatedIndex1766240000000,
];
