// ThreadComm: tagged matching like MPI (by source and tag, in send order), collectives, and abort.
#include "runtime/backend.h"
#include "runtime/threadcomm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>

using namespace dps::runtime;

TEST(ThreadComm, ReceivesMatchBySourceAndTagWhateverTheOrder)
{
    ThreadWorld world(2);
    world.run([](Comm& comm) {
        if (comm.rank() == 0) {
            const int a = 11, b = 22, c = 33;
            const RequestId r1 = comm.isend(&a, sizeof a, 1, 5);
            const RequestId r2 = comm.isend(&b, sizeof b, 1, 7);
            const RequestId r3 = comm.isend(&c, sizeof c, 1, 5);
            comm.wait(r1);
            comm.wait(r2);
            EXPECT_TRUE(comm.test(r3));
        } else {
            int x = 0, y = 0, z = 0;
            const RequestId ry = comm.irecv(&y, sizeof y, 0, 7);
            const RequestId rx = comm.irecv(&x, sizeof x, 0, 5);
            const RequestId rz = comm.irecv(&z, sizeof z, 0, 5);
            comm.wait(rz);
            comm.wait(ry);
            comm.wait(rx);
            EXPECT_EQ(x, 11); // same tag: in send order
            EXPECT_EQ(y, 22);
            EXPECT_EQ(z, 33);
        }
    });
}

TEST(ThreadComm, PostedReceiveCompletesWhenTheSendArrives)
{
    ThreadWorld world(2);
    world.run([](Comm& comm) {
        int value = 0;
        if (comm.rank() == 1) {
            const RequestId r = comm.irecv(&value, sizeof value, 0, 1);
            comm.barrier(); // rank 0 sends after this
            comm.wait(r);
            EXPECT_EQ(value, 42);
        } else {
            comm.barrier();
            value = 42;
            comm.wait(comm.isend(&value, sizeof value, 1, 1));
        }
    });
}

TEST(ThreadComm, GatherBroadcastAndReduce)
{
    ThreadWorld world(3);
    world.run([](Comm& comm) {
        const std::vector<char> mine(static_cast<std::size_t>(comm.rank()) + 1, static_cast<char>('a' + comm.rank()));
        const auto all = comm.gather(mine, 1);
        if (comm.rank() == 1) {
            ASSERT_EQ(all.size(), 3u);
            EXPECT_EQ(std::string(all[2].begin(), all[2].end()), "ccc");
        } else {
            EXPECT_TRUE(all.empty());
        }
        std::vector<char> data;
        if (comm.rank() == 2)
            data = { 'x', 'y' };
        comm.broadcast(data, 2);
        EXPECT_EQ(std::string(data.begin(), data.end()), "xy");
        double values[2] = { 1.0 * comm.rank(), 2.0 };
        comm.reduceSum(values, 2, 0);
        if (comm.rank() == 0) {
            EXPECT_EQ(values[0], 3.0);
            EXPECT_EQ(values[1], 6.0);
        }
    });
}

TEST(ThreadComm, AbortWakesEveryBlockedRankAndTheFailureIsRethrown)
{
    ThreadWorld world(3);
    std::atomic<int> aborted { 0 };
    try {
        world.run([&](Comm& comm) {
            if (comm.rank() == 2)
                throw std::logic_error("rank 2 failed");
            try {
                int x = 0;
                comm.wait(comm.irecv(&x, sizeof x, 2, 0)); // never sent
            } catch (const ThreadAborted&) {
                ++aborted;
                throw;
            }
        });
        FAIL() << "no exception";
    } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "rank 2 failed");
    }
    EXPECT_EQ(aborted.load(), 2);
}

TEST(ThreadComm, RefusesUnknownPeersAndTags)
{
    ThreadWorld world(1);
    world.run([](Comm& comm) {
        int x = 0;
        EXPECT_THROW(comm.isend(&x, sizeof x, 1, 0), RuntimeError);
        EXPECT_THROW(comm.irecv(&x, sizeof x, 0, comm.maxTag() + 1), RuntimeError);
    });
}
