/**
 * The tables, as TypeORM entities. Names follow the seed application's tables (tb_user, tb_blog,
 * tb_follow, tb_blog_like) so its data and habits carry over. The schema itself is created by the
 * migrations in migrations/; these classes describe it for TypeORM and for readers.
 *
 * Column types are spelled out (`type: ...`) because decorator metadata is not always emitted
 * (esbuild-based runners drop it). BIGINT ids arrive from mysql2 as strings; `bigintNumber`
 * turns them into numbers: ids stay far below 2^53.
 */
import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn, ValueTransformer } from 'typeorm';

export const bigintNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

@Entity({ name: 'tb_user' })
export class UserEntity {
  /** BIGINT; mysql2 returns it as a string (TypeORM takes no transformer on generated keys). */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  /** As the user typed it; shown, never used to look a user up. */
  @Column({ name: 'nick_name', type: 'varchar', length: 32 })
  nickName!: string;

  /** The unique, case-folded form of nick_name (UserService nickNameKey), binary collation. */
  @Index('uq_user_nick_key', { unique: true })
  @Column({ name: 'nick_key', type: 'varchar', length: 128, collation: 'utf8mb4_bin' })
  nickKey!: string;

  /** scrypt hash in the form scrypt$N$r$p$salt$hash; never leaves the service. */
  @Column({ name: 'password', type: 'varchar', length: 255 })
  passwordHash!: string;

  @Column({ type: 'varchar', length: 512, nullable: true })
  icon!: string | null;

  /** Kept exact in the transaction that inserts or deletes the tb_follow row. */
  @Column({ name: 'follower_count', type: 'int', default: 0 })
  followerCount!: number;

  @Column({ name: 'following_count', type: 'int', default: 0 })
  followingCount!: number;

  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;

  /** The user has blogs that were not fanned out (hybrid model): readers merge them in. */
  @Column({ name: 'has_pulled_blogs', type: 'boolean', default: false })
  hasPulledBlogs!: boolean;

  /** Counts the user's follow changes, in commit order: the versions of feed/inbox.ts. */
  @Column({ name: 'feed_version', type: 'bigint', default: 0, transformer: bigintNumber })
  feedVersion!: number;
}

@Entity({ name: 'tb_blog' })
@Index('ix_blog_user_created', ['userId', 'createdAt', 'id'])
export class BlogEntity {
  /** BIGINT; mysql2 returns it as a string (TypeORM takes no transformer on generated keys). */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ name: 'user_id', type: 'bigint', transformer: bigintNumber })
  userId!: number;

  @Column({ type: 'varchar', length: 255 })
  title!: string;

  @Column({ type: 'text' })
  content!: string;

  /** A JSON array of image URLs, stored as text. */
  @Column({ type: 'text' })
  images!: string;

  /** The like count, kept exact in the transaction that changes tb_blog_like. */
  @Column({ type: 'int', default: 0 })
  liked!: number;

  /** The feed score (epoch ms) is taken from this column, never from the time of a fan-out. */
  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;

  @Column({ name: 'deleted_at', type: 'datetime', precision: 3, nullable: true })
  deletedAt!: Date | null;

  /** Fanned out into the followers' inboxes (false: a big author's blog in the hybrid model). */
  @Column({ type: 'boolean', default: true })
  pushed!: boolean;
}

@Entity({ name: 'tb_follow' })
@Index('uq_follow_pair', ['userId', 'followUserId'], { unique: true })
@Index('ix_follow_followee', ['followUserId', 'userId'])
export class FollowEntity {
  /** BIGINT; mysql2 returns it as a string (TypeORM takes no transformer on generated keys). */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  /** The follower. */
  @Column({ name: 'user_id', type: 'bigint', transformer: bigintNumber })
  userId!: number;

  /** The followee. */
  @Column({ name: 'follow_user_id', type: 'bigint', transformer: bigintNumber })
  followUserId!: number;

  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;
}

@Entity({ name: 'tb_blog_like' })
@Index('ix_like_user_blog', ['userId', 'blogId'])
export class BlogLikeEntity {
  @PrimaryColumn({ name: 'blog_id', type: 'bigint', transformer: bigintNumber })
  blogId!: number;

  @PrimaryColumn({ name: 'user_id', type: 'bigint', transformer: bigintNumber })
  userId!: number;

  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;
}

/** A fan-out event of the transactional outbox, and its progress cursor (fanout/fanout.store.ts). */
@Entity({ name: 'tb_fanout_task' })
@Index('ix_fanout_task_status', ['status', 'id'])
export class FanoutTaskEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  /** 'deliver' or 'retract'. */
  @Column({ type: 'varchar', length: 16 })
  kind!: string;

  @Column({ name: 'blog_id', type: 'bigint', transformer: bigintNumber })
  blogId!: number;

  @Column({ name: 'author_id', type: 'bigint', transformer: bigintNumber })
  authorId!: number;

  /** The blog's created_at in epoch ms: the inbox score. */
  @Column({ type: 'bigint', transformer: bigintNumber })
  score!: number;

  /** 'pending' (in the outbox only), 'queued', 'done'. */
  @Column({ type: 'varchar', length: 16 })
  status!: string;

  @Column({ type: 'boolean', default: false })
  dispatched!: boolean;

  @Column({ name: 'cursor_user_id', type: 'bigint', default: 0, transformer: bigintNumber })
  cursorUserId!: number;

  @Column({ name: 'chunks_total', type: 'int', default: 0 })
  chunksTotal!: number;

  @Column({ name: 'chunks_done', type: 'int', default: 0 })
  chunksDone!: number;

  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;

  @Column({ name: 'queued_at', type: 'datetime', precision: 3, nullable: true })
  queuedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'datetime', precision: 3, nullable: true })
  finishedAt!: Date | null;
}

/** One chunk of a fan-out: the followers with after_user_id < user_id <= through_user_id. */
@Entity({ name: 'tb_fanout_chunk' })
export class FanoutChunkEntity {
  @PrimaryColumn({ name: 'task_id', type: 'bigint', transformer: bigintNumber })
  taskId!: number;

  @PrimaryColumn({ type: 'int' })
  seq!: number;

  @Column({ name: 'after_user_id', type: 'bigint', transformer: bigintNumber })
  afterUserId!: number;

  @Column({ name: 'through_user_id', type: 'bigint', transformer: bigintNumber })
  throughUserId!: number;

  /** Runs started; more than 1 means the chunk was redone after a failure. */
  @Column({ type: 'int', default: 0 })
  runs!: number;

  @Column({ name: 'finished_at', type: 'datetime', precision: 3, nullable: true })
  finishedAt!: Date | null;
}

export const ENTITIES = [UserEntity, BlogEntity, FollowEntity, BlogLikeEntity, FanoutTaskEntity, FanoutChunkEntity];
