// MessageBanner, the one inline banner of the main window and the Run panel: hidden until a message, one
// colour and symbol per kind in light and dark palettes, an empty message hides it, the action button, the
// ✕ that dismisses it, and a banner without ✕.
#include "offscreen.h"

#include "run/messagebanner.h"

#include <QLabel>
#include <QPalette>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QToolButton>

using namespace dps::ui;

class TestMessageBanner : public QObject {
    Q_OBJECT

private:
    static QPushButton* action(MessageBanner& b) { return b.findChild<QPushButton*>(QStringLiteral("bannerAction")); }
    static QToolButton* dismiss(MessageBanner& b) { return b.findChild<QToolButton*>(QStringLiteral("bannerDismiss")); }
    static QString icon(MessageBanner& b) { return b.findChild<QLabel*>(QStringLiteral("bannerIcon"))->text(); }

private slots:
    void init() { QApplication::setPalette(QPalette(QColor(0xef, 0xef, 0xef))); }

    void hiddenUntilAMessage()
    {
        MessageBanner b;
        QVERIFY(b.isHidden());
        QCOMPARE(b.text(), QString());
        QCOMPARE(b.kind(), MessageBanner::Kind::Info);
        QVERIFY(b.isDismissible());
        b.showMessage(MessageBanner::Kind::Error, QStringLiteral("Cannot open demo.dpstudio.json: line 3"));
        QVERIFY(!b.isHidden());
        QCOMPARE(b.text(), QStringLiteral("Cannot open demo.dpstudio.json: line 3"));
        QCOMPARE(b.kind(), MessageBanner::Kind::Error);
        QCOMPARE(b.actionText(), QString());
        QVERIFY(action(b)->isHidden());
    }

    void oneLookPerKind_data()
    {
        QTest::addColumn<MessageBanner::Kind>("kind");
        QTest::addColumn<QString>("accent");
        QTest::addColumn<QString>("light");
        QTest::addColumn<QString>("dark");
        QTest::addColumn<QString>("symbol");
        QTest::newRow("info") << MessageBanner::Kind::Info << "#2f6fd0"
                              << "#e6f0fd"
                              << "#1f334d"
                              << "ℹ";
        QTest::newRow("running") << MessageBanner::Kind::Running << "#1e88e5"
                                 << "#e3f1fc"
                                 << "#1a3348"
                                 << "▶";
        QTest::newRow("success") << MessageBanner::Kind::Success << "#2e7d32"
                                 << "#e6f4e7"
                                 << "#1f3a22"
                                 << "✔";
        QTest::newRow("warning") << MessageBanner::Kind::Warning << "#c98600"
                                 << "#fff4d6"
                                 << "#483a1a"
                                 << "⚠";
        QTest::newRow("error") << MessageBanner::Kind::Error << "#d03030"
                               << "#fde8e8"
                               << "#4a2323"
                               << "✖";
    }

    void oneLookPerKind()
    {
        QFETCH(MessageBanner::Kind, kind);
        QFETCH(QString, accent);
        QFETCH(QString, light);
        QFETCH(QString, dark);
        QFETCH(QString, symbol);
        MessageBanner b;
        b.showMessage(kind, QStringLiteral("text"));
        QCOMPARE(b.styleSheet(),
            QStringLiteral("#messageBanner { background: %1; border: 1px solid %2; border-left: 4px solid %2; "
                           "border-radius: 3px; } #messageBanner QLabel { color: #1a1a1a; }")
                .arg(light, accent));
        QCOMPARE(icon(b), QStringLiteral("<span style='color:%1; font-size:14pt'>%2</span>").arg(accent, symbol));
        // A dark palette restyles the banner that is already shown (once the palette change is delivered).
        QApplication::setPalette(QPalette(QColor(0x30, 0x30, 0x30)));
        QCoreApplication::processEvents();
        QCOMPARE(b.styleSheet(),
            QStringLiteral("#messageBanner { background: %1; border: 1px solid %2; border-left: 4px solid %2; "
                           "border-radius: 3px; } #messageBanner QLabel { color: #eeeeee; }")
                .arg(dark, accent));
    }

    void emptyTextHides()
    {
        MessageBanner b;
        b.showMessage(MessageBanner::Kind::Running, QStringLiteral("Running: step 1 of 3"));
        QVERIFY(!b.isHidden());
        b.showMessage(MessageBanner::Kind::Warning, QString());
        QVERIFY(b.isHidden());
        QCOMPARE(b.text(), QString());
        QCOMPARE(b.kind(), MessageBanner::Kind::Warning);
    }

    void actionButtonEmits()
    {
        MessageBanner b;
        QSignalSpy triggered(&b, &MessageBanner::actionTriggered);
        b.showMessage(MessageBanner::Kind::Info, QStringLiteral("Exported out.csv"), QStringLiteral("Open Folder"));
        QCOMPARE(b.actionText(), QStringLiteral("Open Folder"));
        QCOMPARE(action(b)->text(), QStringLiteral("Open Folder"));
        QVERIFY(!action(b)->isHidden());
        QTest::mouseClick(action(b), Qt::LeftButton);
        QCOMPARE(triggered.count(), 1);
        QVERIFY2(!b.isHidden(), "the action leaves the message up");
        b.showMessage(MessageBanner::Kind::Info, QStringLiteral("Saved"));
        QVERIFY(action(b)->isHidden());
        QCOMPARE(b.actionText(), QString());
    }

    void dismissHides()
    {
        MessageBanner b;
        QSignalSpy dismissed(&b, &MessageBanner::dismissed);
        b.showMessage(MessageBanner::Kind::Error, QStringLiteral("Calibration failed: no steps"));
        QVERIFY(!dismiss(b)->isHidden());
        QCOMPARE(dismiss(b)->toolTip(), QStringLiteral("Dismiss"));
        QTest::mouseClick(dismiss(b), Qt::LeftButton);
        QVERIFY(b.isHidden());
        QCOMPARE(b.text(), QString());
        QCOMPARE(dismissed.count(), 1);
    }

    void withoutDismiss()
    {
        MessageBanner b;
        b.setDismissible(false);
        b.showMessage(MessageBanner::Kind::Success, QStringLiteral("Run finished: 3 steps."));
        QVERIFY(!b.isDismissible());
        QVERIFY(dismiss(b)->isHidden());
        QCOMPARE(b.text(), QStringLiteral("Run finished: 3 steps."));
        b.clear();
        QVERIFY(b.isHidden());
        QCOMPARE(b.text(), QString());
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestMessageBanner)
#include "test_messagebanner.moc"
