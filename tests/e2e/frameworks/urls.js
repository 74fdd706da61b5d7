// The object URLs a page has made and not revoked (for the framework apps:
// every one useBlobUrl makes must be revoked once it is no longer shown).
const live = new Set();
const create = URL.createObjectURL;
const revoke = URL.revokeObjectURL;
URL.createObjectURL = (blob) => {
  const url = create.call(URL, blob);
  live.add(url);
  return url;
};
URL.revokeObjectURL = (url) => {
  live.delete(url);
  revoke.call(URL, url);
};
export const liveUrls = () => live.size;
