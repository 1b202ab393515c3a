/** The mutations the hydration cache's tests make, each answering what a page would show after it. */
export const LIKE = 'mutation($b: ID!, $l: Boolean!) { likeBlog(blogId: $b, liked: $l) { likeCount } }';
export const EDIT = 'mutation($i: UpdateBlogInput!) { updateBlog(input: $i) { id title } }';
export const RENAME = 'mutation($i: UpdateProfileInput!) { updateProfile(input: $i) { id nickName } }';
export const DELETE = 'mutation($b: ID!) { deleteBlog(blogId: $b) }';
