// BouncyCastle 1.72's streaming CMS parsers as the baseline of bench/pkcs7-bouncycastle.bench.ts:
// a 1 GiB EnvelopedData decrypted, or a 1 GiB SignedData's content drained and its signer's
// signature verified, into a counting sink (nothing is written). One JVM serves every job of a
// bench run, so its start-up and JIT warm-up (the bench's warm-up jobs) stay out of the figures.
// Usage: java BcStream <recipient key, PEM PKCS#8>, then one job per line
// on stdin, "envelope <file>" or "signed <file>"; each answers one line on stdout:
//   ok <content bytes> <seconds> <verified: true|false|-> or error <message>
// The JCA providers are the JDK's defaults (SunJCE's AES and SUN's SHA-256 use the CPU's AES and
// SHA instructions; BC's own provider is pure Java and slower), so the baseline is BC at its best.
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.security.PrivateKey;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cms.CMSEnvelopedDataParser;
import org.bouncycastle.cms.CMSSignedDataParser;
import org.bouncycastle.cms.RecipientInformation;
import org.bouncycastle.cms.SignerInformation;
import org.bouncycastle.cms.jcajce.JceKeyTransEnvelopedRecipient;
import org.bouncycastle.cms.jcajce.JcaSimpleSignerInfoVerifierBuilder;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.operator.DigestCalculatorProvider;
import org.bouncycastle.operator.jcajce.JcaDigestCalculatorProviderBuilder;
import org.bouncycastle.util.Store;

public class BcStream {
  private static final int BUFFER = 64 * 1024;

  public static void main(String[] args) throws Exception {
    PrivateKey key;
    try (PEMParser pem = new PEMParser(new FileReader(args[0]))) {
      key = new JcaPEMKeyConverter().getPrivateKey((PrivateKeyInfo) pem.readObject());
    }
    DigestCalculatorProvider digests = new JcaDigestCalculatorProviderBuilder().build();
    BufferedReader jobs = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = jobs.readLine()) != null; ) {
      String[] job = line.split(" ", 2);
      try {
        long t0 = System.nanoTime();
        String answer =
            job[0].equals("envelope") ? envelope(job[1], key) : signed(job[1], digests);
        double seconds = (System.nanoTime() - t0) / 1e9;
        String[] parts = answer.split(" ");
        System.out.println("ok " + parts[0] + " " + seconds + " " + parts[1]);
      } catch (Exception e) {
        System.out.println("error " + e.toString().replace('\n', ' '));
      }
      System.out.flush();
    }
  }

  /** Decrypts for the first recipient; answers "<content bytes> -". */
  private static String envelope(String file, PrivateKey key) throws Exception {
    try (InputStream in = new BufferedInputStream(new FileInputStream(file), BUFFER)) {
      CMSEnvelopedDataParser parser = new CMSEnvelopedDataParser(in);
      RecipientInformation recipient = parser.getRecipientInfos().getRecipients().iterator().next();
      long n = drain(recipient.getContentStream(new JceKeyTransEnvelopedRecipient(key)).getContentStream());
      return n + " -";
    }
  }

  /**
   * Drains the signed content (the parser digests it on the way), then verifies each signer with
   * the certificate the SignedData carries; answers "<content bytes> <all verified>".
   */
  @SuppressWarnings("unchecked") // SignerId is a raw Selector in BC 1.72
  private static String signed(String file, DigestCalculatorProvider digests) throws Exception {
    try (InputStream in = new BufferedInputStream(new FileInputStream(file), BUFFER)) {
      CMSSignedDataParser parser = new CMSSignedDataParser(digests, in);
      long n = drain(parser.getSignedContent().getContentStream());
      Store<X509CertificateHolder> certs = parser.getCertificates();
      boolean ok = true;
      for (SignerInformation signer : parser.getSignerInfos().getSigners()) {
        X509CertificateHolder cert =
            (X509CertificateHolder) certs.getMatches(signer.getSID()).iterator().next();
        ok &= signer.verify(new JcaSimpleSignerInfoVerifierBuilder().build(cert));
      }
      return n + " " + ok;
    }
  }

  /** Reads a stream to its end into a counting sink. */
  private static long drain(InputStream content) throws Exception {
    byte[] buf = new byte[BUFFER];
    long n = 0;
    for (int r; (r = content.read(buf)) != -1; ) n += r;
    return n;
  }
}
