import {
  basename,
  parseContentType,
  parseDisposition,
} from '../../../shared/mime/header-params.ts';

describe('multipart header values', () => {
  it('when a Content-Type has parameters, then type, subtype and parameter names are lower-cased and values kept', () => {
    expect(parseContentType('Multipart/Form-Data; Boundary=----AbC; charset="utf-8"')).toEqual({
      type: 'multipart',
      subtype: 'form-data',
      params: { boundary: '----AbC', charset: 'utf-8' },
    });
    expect(parseContentType('application/octet-stream')).toEqual({
      type: 'application',
      subtype: 'octet-stream',
      params: {},
    });
    expect(parseContentType('text/plain;a=1;a=2')?.params.a).toBe('1');
  });

  it.each([
    '',
    'text',
    'text/',
    '/plain',
    'text/plain;',
    'text/plain; =x',
    'text/plain; a',
    'text/plain; a="open',
    'text/plain x',
  ])('when a Content-Type is malformed (%j), then it parses to undefined', (value) => {
    expect(parseContentType(value)).toBeUndefined();
  });

  it('when a disposition names a field, then its name and filename come out, quoted strings unescaped', () => {
    expect(parseDisposition('form-data; name="keystore"; filename="a \\"b\\".p12"')).toEqual({
      type: 'form-data',
      params: { name: 'keystore', filename: 'a "b".p12' },
    });
    expect(parseDisposition('FORM-DATA;name=file')).toEqual({
      type: 'form-data',
      params: { name: 'file' },
    });
  });

  it('when a filename comes as an RFC 8187 extended value, then it is decoded in its charset under filename*', () => {
    expect(
      parseDisposition("form-data; name=f; filename*=UTF-8''%e2%82%ac%20rates.txt")?.params[
        'filename*'
      ],
    ).toBe('€ rates.txt');
    expect(
      parseDisposition("form-data; name=f; filename*=iso-8859-1'fr'caf%E9")?.params['filename*'],
    ).toBe('café');
    expect(parseDisposition("form-data; name=f; filename*=UTF-8''a%ffb")?.params['filename*']).toBe(
      'a\ufffdb',
    );
  });

  it.each([
    ['an empty value', ''],
    ['only spaces', '  '],
    ['no type', '; name=x'],
    ['an empty parameter name', 'form-data; =x'],
    ['an extended value without charset', "form-data; filename*=''x"],
    ['a bad percent escape', "form-data; filename*=UTF-8''%zz"],
    ['an unknown charset', "form-data; filename*=x-nope''a"],
    ['a control character in a quoted string', 'form-data; name="a\u0001"'],
  ])(
    'when a disposition has %s, then it parses to undefined (the part is skipped)',
    (_what, value) => {
      expect(parseDisposition(value)).toBeUndefined();
    },
  );

  it('when a client sends a path as filename, then only its last segment is kept, and never . or ..', () => {
    expect(basename('C:\\Users\\me\\key.p12')).toBe('key.p12');
    expect(basename('../../etc/passwd')).toBe('passwd');
    expect(basename('a/..')).toBe('');
    expect(basename('.')).toBe('');
    expect(basename('plain.txt')).toBe('plain.txt');
  });
});
