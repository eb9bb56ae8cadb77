import { looksLikeCredential, NOT_SHOWN, previewValue, rememberPlaceholderText, shownText } from './value-preview';

describe('looksLikeCredential', () => {
  it.each(['password', 'DB_PASSWORD', 'clientSecret', 'api-token', 'credentials', 'auth', 'apiKey', 'PRIVATE_KEY'])(
    '%s names a credential',
    (key) => expect(looksLikeCredential(key)).toBe(true),
  );

  it.each(['maxTokens', 'keyHeader', 'key', 'unknownKeys', 'max-attempts', 'tokenizer', 'keyPrefix'])(
    '%s does not',
    (key) => expect(looksLikeCredential(key)).toBe(false),
  );
});

describe('previewValue', () => {
  it.each([[{ a: 1, b: [true, null, 'x'] }], [[1, 'two', { three: 3 }]], [0], ['text'], [null], [{ at: new Date(0) }]])(
    'renders %j as JSON.stringify does',
    (value) => expect(previewValue(value)).toBe(JSON.stringify(value)),
  );

  it('cuts what is longer than the limit, ending in ...', () => {
    const preview = previewValue({ list: Array.from({ length: 100 }, (_, i) => i) });
    expect(preview).toHaveLength(80);
    expect(preview.endsWith('...')).toBe(true);
  });

  it('renders a map that contains itself without looping', () => {
    const loop: Record<string, unknown> = { name: 'a' };
    loop.self = loop;
    expect(previewValue(loop)).toBe('{"name":"a","self":"[Circular]"}');
  });

  it('hides the value of a key that names a credential, at any depth', () => {
    expect(previewValue({ db: { password: 'pw' } })).toBe(`{"db":{"password":"${NOT_SHOWN}"}}`);
  });

  it('shows text that came from a placeholder as the placeholder, and its comma-separated parts too', () => {
    rememberPlaceholderText('org.acme.A,java.io.IOException', '${EXCEPTIONS}');
    expect(previewValue(['org.acme.A,java.io.IOException'])).toBe('["${EXCEPTIONS}"]');
    expect(shownText('org.acme.A')).toBe('${EXCEPTIONS}');
    expect(shownText('java.io.IOException')).toBe('${EXCEPTIONS}');
    rememberPlaceholderText('java.io.EOFException,org.acme.B', 'java.io.EOFException,${MORE}');
    expect(shownText('org.acme.B')).toBe('java.io.EOFException,${MORE}');
    expect(shownText('java.io.EOFException')).toBe('java.io.EOFException');
  });

  it('hides the password of a URL, wherever the text sits', () => {
    expect(previewValue('postgres://app:hunter2@db:5432/shop')).toBe(`"postgres://app:${NOT_SHOWN}@db:5432/shop"`);
    expect(previewValue({ url: 'redis://:hunter2@cache' })).toBe(`{"url":"redis://:${NOT_SHOWN}@cache"}`);
    expect(previewValue('https://example.com/a@b')).toBe('"https://example.com/a@b"');
  });

  it('names a class instance by its class, never listing what it holds (a client keeps its credentials)', () => {
    class Pool {
      readonly options = { connectionString: 'postgres://app:hunter2@db/shop', user: 'app' };
    }
    expect(previewValue(new Pool())).toBe('an instance of Pool');
    expect(previewValue({ store: new Pool() })).toBe('{"store":an instance of Pool}');
    expect(previewValue(new (class {})())).toBe('an instance of an anonymous class');
  });

  it('shows a placeholder text read with its spaces trimmed as the placeholder', () => {
    rememberPlaceholderText(' org.acme.Secret\n', '${SECRET_NAME}');
    expect(shownText('org.acme.Secret')).toBe('${SECRET_NAME}');
  });

  it('does not stand an empty placeholder text for every empty value', () => {
    rememberPlaceholderText('', '${EMPTY:}');
    expect(previewValue('')).toBe('""');
  });
});
