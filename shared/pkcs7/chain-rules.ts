/**
 * What `verify: "chain"` asks of the certificates on a signer's path besides names and signatures:
 * the signer's certificate is one for signing mail (RFC 8550 section 4.4), and each CA above it
 * may issue what is below it (RFC 5280 section 4.2.1: keyUsage keyCertSign, basicConstraints
 * pathLenConstraint, nameConstraints). Each rule answers why a certificate fails it, or null.
 * docs/migration.md ("verify: signature or chain") lists them.
 */
import {
  BasicConstraints,
  ExtendedKeyUsage,
  KeyUsage,
  KeyUsageFlags,
  NameConstraints,
  SubjectAlternativeName,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_nameConstraints,
  id_ce_subjectAltName,
} from '@peculiar/asn1-x509';
import type { Certificate, GeneralName, GeneralSubtrees, Name } from '@peculiar/asn1-x509';
import { AsnConvert } from '@peculiar/asn1-schema';
import { parseAsn } from '../asn1/der.ts';

const EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';
/** PKCS#9 emailAddress, which older certificates carry in the subject (RFC 5280 section 4.1.2.6). */
const EMAIL_ADDRESS = '1.2.840.113549.1.9.1';

function extension<T>(cert: Certificate, oid: string, type: new () => T, what: string): T | null {
  const ext = cert.tbsCertificate.extensions?.find((e) => e.extnID === oid);
  return ext ? parseAsn(ext.extnValue.buffer, type, what, 'cms_malformed') : null;
}

const keyUsageOf = (cert: Certificate): number | null =>
  extension(cert, id_ce_keyUsage, KeyUsage, 'keyUsage extension')?.toNumber() ?? null;

/**
 * RFC 8550 section 4.4: a signer's certificate with keyUsage must allow digitalSignature or
 * nonRepudiation, and one with extendedKeyUsage must name emailProtection or
 * anyExtendedKeyUsage (as `openssl cms -verify`'s "unsuitable certificate purpose").
 */
export function signerPurposeFault(cert: Certificate): string | null {
  const ku = keyUsageOf(cert);
  if (ku !== null && !(ku & (KeyUsageFlags.digitalSignature | KeyUsageFlags.nonRepudiation)))
    return "the signer's certificate keyUsage allows neither digitalSignature nor nonRepudiation";
  const eku = extension(cert, id_ce_extKeyUsage, ExtendedKeyUsage, 'extendedKeyUsage extension');
  if (eku && !eku.some((p) => p === EMAIL_PROTECTION || p === ANY_EXTENDED_KEY_USAGE))
    return "the signer's certificate extendedKeyUsage names neither emailProtection nor anyExtendedKeyUsage";
  return null;
}

const selfIssued = (c: Certificate): boolean =>
  Buffer.from(AsnConvert.serialize(c.tbsCertificate.issuer)).equals(
    Buffer.from(AsnConvert.serialize(c.tbsCertificate.subject)),
  );

/**
 * Why the CA certificate `path[i]` (i >= 1) may not issue what is below it, or null: its keyUsage
 * lacks keyCertSign, more CA certificates stand between it and the signer than its
 * pathLenConstraint allows (self-issued ones not counted), or a name below it is outside its
 * nameConstraints.
 */
export function issuerFault(path: Certificate[], i: number): string | null {
  const ca = path[i];
  const ku = keyUsageOf(ca);
  if (ku !== null && !(ku & KeyUsageFlags.keyCertSign))
    return `the CA certificate at depth ${i} does not have keyCertSign in its keyUsage`;
  const bc = extension(ca, id_ce_basicConstraints, BasicConstraints, 'basicConstraints extension');
  if (bc?.pathLenConstraint !== undefined) {
    const between = path.slice(1, i).filter((c) => !selfIssued(c)).length;
    if (between > bc.pathLenConstraint)
      return `the CA certificate at depth ${i} allows ${bc.pathLenConstraint} CA certificate(s) below it, the path has ${between}`;
  }
  const nc = extension(ca, id_ce_nameConstraints, NameConstraints, 'nameConstraints extension');
  if (nc) {
    for (let j = 0; j < i; j++) {
      // RFC 5280 section 4.2.1.10: self-issued intermediates are not held to the constraints.
      if (j > 0 && selfIssued(path[j])) continue;
      const why = namesFault(path[j], nc);
      if (why) return `the certificate at depth ${j} ${why} of the CA certificate at depth ${i}`;
    }
  }
  return null;
}

/** The names a certificate claims, by form: its subject and subjectAltName entries. */
function namesOf(cert: Certificate): GeneralName[] {
  const names: GeneralName[] = [];
  const subject = cert.tbsCertificate.subject;
  if (subject.length > 0) names.push({ directoryName: subject } as GeneralName);
  for (const rdn of subject)
    for (const atv of rdn)
      if (atv.type === EMAIL_ADDRESS) {
        const v = atv.value.ia5String ?? atv.value.toString();
        names.push({ rfc822Name: v } as GeneralName);
      }
  const san = extension(cert, id_ce_subjectAltName, SubjectAlternativeName, 'subjectAltName');
  if (san) names.push(...san);
  return names;
}

type Form = 'dNSName' | 'rfc822Name' | 'directoryName' | 'other';

function formOf(n: GeneralName): Form {
  if (n.dNSName !== undefined) return 'dNSName';
  if (n.rfc822Name !== undefined) return 'rfc822Name';
  if (n.directoryName !== undefined) return 'directoryName';
  return 'other';
}

const lower = (s: string) => s.toLowerCase();

/** A DNS name within a constraint: equal, or below it (RFC 5280 section 4.2.1.10). */
function dnsWithin(name: string, base: string): boolean {
  const n = lower(name);
  const b = lower(base).replace(/^\./, '');
  if (b === '') return true;
  return n === b || n.endsWith(`.${b}`);
}

/** A mailbox within a constraint: a mailbox, a host, or (leading dot) any host in a domain. */
function mailWithin(name: string, base: string): boolean {
  const at = name.lastIndexOf('@');
  const host = lower(name.slice(at + 1));
  if (base.includes('@')) return lower(name) === lower(base);
  if (base.startsWith('.')) return host.endsWith(lower(base));
  return host === lower(base);
}

/** A directory name within a constraint: the constraint's RDNs are its first ones, same encoding. */
function dirWithin(name: Name, base: Name): boolean {
  if (base.length > name.length) return false;
  return base.every((rdn, k) =>
    Buffer.from(AsnConvert.serialize(rdn)).equals(Buffer.from(AsnConvert.serialize(name[k]))),
  );
}

function within(n: GeneralName, base: GeneralName): boolean {
  if (n.dNSName !== undefined && base.dNSName !== undefined)
    return dnsWithin(n.dNSName, base.dNSName);
  if (n.rfc822Name !== undefined && base.rfc822Name !== undefined)
    return mailWithin(n.rfc822Name, base.rfc822Name);
  if (n.directoryName && base.directoryName) return dirWithin(n.directoryName, base.directoryName);
  return false;
}

/**
 * Why a certificate's names break `nc`, or null. A name form the constraints restrict that this
 * code does not compare (IP addresses, URIs, ...) fails when the certificate carries such a name
 * (RFC 5280 section 4.2.1.10: process the constraint or reject).
 */
function namesFault(cert: Certificate, nc: NameConstraints): string | null {
  const subtrees = (s: GeneralSubtrees | undefined) => (s ? [...s].map((t) => t.base) : []);
  const permitted = subtrees(nc.permittedSubtrees);
  const excluded = subtrees(nc.excludedSubtrees);
  for (const n of namesOf(cert)) {
    const form = formOf(n);
    const sameForm = (b: GeneralName) =>
      form === 'other'
        ? Object.keys(b).some((k) => (n as Record<string, unknown>)[k] !== undefined)
        : formOf(b) === form;
    const p = permitted.filter(sameForm);
    const x = excluded.filter(sameForm);
    if (form === 'other') {
      if (p.length > 0 || x.length > 0)
        return 'has a name of a form whose constraints are not checked';
      continue;
    }
    if (x.some((b) => within(n, b))) return 'has a name in the excluded subtrees';
    if (p.length > 0 && !p.some((b) => within(n, b)))
      return 'has a name outside the permitted subtrees';
  }
  return null;
}
